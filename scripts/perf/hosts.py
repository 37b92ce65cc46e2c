"""Several hosts: the allreduce across two shaped namespace hosts
(benchmarks/multihost_allreduce.sh), and the scale model's predictions to 4,096 ranks
(benchmarks/scale_model.py), which the page runs rather than reads."""

import os
import sys

from perf import common
from perf.collectives import csv_rows
from perf.common import fmt, table

IMPLS = [
    ("hora", "hora (auto)"),
    ("hora-hierarchical", "hierarchical"),
    ("hora-ring", "flat ring"),
    ("mpi", "MPI_Allreduce"),
]


class Multihost(common.Section):
    name = "multihost_allreduce"
    title = "Allreduce across hosts"
    about = (
        "4 ranks on 2 hosts, each host a network namespace whose egress is shaped to the given "
        "rate (tbf), started under `mpirun -H`: hora's choice, the hierarchical allreduce, the "
        "flat ring and MPI_Allreduce on the same buffers, busbw in GB/s, every result checked. "
        "The last column is hora's choice over the better of the flat ring and MPI_Allreduce "
        "(target: 1.2 from 16 MiB). The hosts share the machine's cores with the kernel's TCP "
        "work, so no column reaches the link's rate; figures need a quiet machine. Where the "
        "kernel has no netem, the links get no added delay."
    )

    output = ("csv", "the allreduce.csv multihost_allreduce.sh --out DIR writes")

    def ingest(self, args):
        sizes = {}
        for r in csv_rows(args.csv):
            if r["impl"] in dict(IMPLS):
                sizes.setdefault(int(r["size_bytes"]), {})[r["impl"]] = float(r["busbw_gbs"])
        return [args.command], {"rows": [dict(size=s, **v) for s, v in sorted(sizes.items())]}, None

    def render(self, data):
        rows = []
        for r in data["results"]["rows"]:
            flat = max((r[i] for i in ("hora-ring", "mpi") if r.get(i) is not None), default=None)
            rows.append(
                [common.size_label(r["size"])]
                + [fmt(r.get(i), 2) for i, _ in IMPLS]
                + [fmt(common.ratio(r.get("hora"), flat), 2)]
            )
        return (
            self.intro(data)
            + table(["size"] + [label for _, label in IMPLS] + ["auto / best flat"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )

    def headline(self, data):
        ratios = []
        for r in data["results"]["rows"]:
            flat = max((r[i] for i in ("hora-ring", "mpi") if r.get(i) is not None), default=None)
            if r["size"] >= 16 << 20 and common.ratio(r.get("hora"), flat) is not None:
                ratios.append(common.ratio(r["hora"], flat))
        if not ratios:
            return []
        return [
            (
                "2 hosts, from 16 MiB: hora's choice over the best flat allreduce",
                fmt([min(ratios), max(ratios)], 2, "x"),
            )
        ]


class ScaleModel(common.Section):
    name = "scale_model"
    title = "Scale model: to 4,096 ranks"
    about = (
        "`benchmarks/scale_model.py` carries the selector's alpha-beta cost model to 4,096 ranks: "
        "allreduce time per algorithm (`table`), and a training step's scaling efficiency from "
        "its compute time and gradient bytes (`efficiency`: gradients ready through the backward "
        "pass, 64 MiB fusion buckets allreduced as they fill, the best algorithm per bucket). "
        "With `--cores` and `--tcp-cpu-gbs` (`benchmarks/tcp_cpu_probe.py` measures the latter) "
        "it also bounds an allreduce by the CPU work of ranks that share cores; "
        "`multihost_allreduce.sh` prints its prediction beside every measured point. Below, its "
        "predictions for Horovod's published runs, from inputs stated rather than fitted (4 GPUs "
        "per server, 25 Gbit/s between servers at 10 us, 10 GB/s and 5 us within one, "
        "reductions at 100 GB/s, batch 64 per GPU at tf_cnn_benchmarks' P100 rates, float32 "
        "gradients, backward = 2 x forward); Horovod reports 90% for ResNet-101 and 68% for "
        "VGG-16 at 512 GPUs."
    )
    command = "python3 benchmarks/scale_model.py readme"
    rerun = f"`{command}` failed when this page was written"

    def load(self, bench_dir):
        root = os.path.dirname(os.path.dirname(os.path.abspath(bench_dir)))
        out = common.run_output(
            [sys.executable, os.path.join(root, "benchmarks", "scale_model.py"), "readme"]
        )
        return {"table": out.strip().splitlines()} if out else None

    def render(self, data):
        return self.intro(None) + data["table"] + [""] + common.commands_block([self.command])
