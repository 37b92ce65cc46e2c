"""Adasum's sections: its cost against Sum through the engine (benchmarks/adasum_bench.cc) and
a convergence check of examples/pytorch/train.py with Average against Adasum."""

import re

from perf import common
from perf.common import fmt, table


def bench_figures(path):
    """{key: value} of the "adasum_bench: key value" lines rank 0 printed."""
    figures = {}
    for line in common.rank0_lines(common.read_text(path)):
        m = re.match(r"adasum_bench: (\w+) ([0-9.]+)$", line)
        if m:
            figures[m.group(1)] = float(m.group(2))
    return figures


class Adasum(common.Section):
    name = "adasum"
    title = "Adasum"
    about = (
        "`adasum_bench` under horarun (builtin backend, one host): blocking allreduces of 16 MiB "
        "of float32 through the engine with op Sum and op Adasum, in turn in each of 5 rounds "
        "(medians), as one tensor and as a grouped allreduce of 64 tensors of 256 KiB (one "
        "fused bucket: Adasum keeps per-tensor dot products in it). The ratio is Adasum's time "
        "over Sum's in the same round."
    )

    def add_arguments(self, parser):
        parser.add_argument("--command", action="append", required=True, help="each run's command")
        parser.add_argument("runs", nargs="+", help="adasum_bench outputs (one per rank count)")

    def ingest(self, args):
        results = [bench_figures(path) for path in args.runs]
        return args.command, results, None

    def render(self, data):
        rows = [
            [
                f"{int(r['ranks'])}",
                fmt(r["sum_ms"], 1, " ms"),
                fmt(r["adasum_ms"], 1, " ms"),
                f"{r['ratio']:.2f}x",
                fmt(r["grouped_sum_ms"], 1, " ms"),
                fmt(r["grouped_adasum_ms"], 1, " ms"),
                f"{r['grouped_ratio']:.2f}x",
            ]
            for r in data["results"]
        ]
        header = [
            "ranks",
            "Sum, 1 tensor",
            "Adasum, 1 tensor",
            "Adasum / Sum",
            "Sum, 64 grouped",
            "Adasum, 64 grouped",
            "grouped / 1 tensor (Adasum)",
        ]
        return (
            self.intro(data) + table(header, rows) + [""] + common.commands_block(data["commands"])
        )

    def headline(self, data):
        return [
            (
                f"Adasum over Sum, 16 MiB float32 allreduce at {int(r['ranks'])} ranks",
                f"{r['ratio']:.2f}x",
            )
            for r in data["results"]
        ]


def epochs_of(path):
    """[(epoch, loss, accuracy %)] of train.py's "epoch N: loss L, held-out accuracy A%" lines."""
    out = []
    for line in common.rank0_lines(common.read_text(path)):
        m = re.match(r"epoch (\d+): loss ([0-9.naninf]+), held-out accuracy ([0-9.]+)%", line)
        if m:
            out.append([int(m.group(1)), float(m.group(2)), float(m.group(3))])
    return out


class AdasumConvergence(common.Section):
    name = "adasum_convergence"
    title = "Adasum convergence"
    about = (
        "examples/pytorch/train.py (the small convolutional network on its synthetic 10-class "
        "data) at a large total batch, with DistributedOptimizer averaging the gradients "
        "(learning rate times the number of ranks, SGD with momentum 0.9) against "
        "DistributedOptimizer(op=Adasum) (each rank's step combined by Adasum, the single-rank "
        "learning rate). The table gives the training loss and held-out accuracy per epoch."
    )

    def add_arguments(self, parser):
        parser.add_argument("--command", action="append", required=True, help="each run's command")
        parser.add_argument("average", help="train.py --op average's output")
        parser.add_argument("adasum", help="train.py --op adasum's output")

    def ingest(self, args):
        results = {"average": epochs_of(args.average), "adasum": epochs_of(args.adasum)}
        return args.command, results, None

    def render(self, data):
        avg, ada = data["results"]["average"], data["results"]["adasum"]
        rows = [
            [
                str(a[0]),
                f"{a[1]:.4f}",
                fmt(a[2], 2, "%"),
                f"{b[1]:.4f}",
                fmt(b[2], 2, "%"),
            ]
            for a, b in zip(avg, ada, strict=False)
        ]
        header = ["epoch", "Average: loss", "accuracy", "Adasum: loss", "accuracy"]
        return (
            self.intro(data) + table(header, rows) + [""] + common.commands_block(data["commands"])
        )
