"""The engine's sections: fusion and per-step overhead (engine_fusion_bench), a lone call
through the engine (hora-bench --through-engine), and the reference trainer's scaling
(benchmarks/trainer_scaling.sh)."""

import re

from perf import common
from perf.collectives import csv_rows, hora_bench_machine
from perf.common import fmt, fmt_time, table


def figure(lines, label):
    """The number after `label` on the line that has it, e.g. "engine step, fused  170.2 us"."""
    for line in lines:
        m = re.search(re.escape(label) + r"\s+([0-9.]+)", line)
        if m:
            return float(m.group(1))
    return None


class EngineFusion(common.Section):
    name = "engine_fusion"
    title = "Engine: fusion and overhead"
    about = (
        "`engine_fusion_bench` times a training step through the engine: 200 float32 tensors "
        "enqueued back to back with `allreduce_async`, then all waited (every one a cache hit "
        "after the first step), against one raw allreduce of the same bytes on the "
        "communicator, and against the same tensors reduced where they lie without the engine "
        "(`allreduce_spans`, the fused bucket's data path). The 4-byte step is the engine's own "
        "cost per step. Raw, fused and 4-byte steps alternate in rounds and each ratio is taken "
        "within its round."
    )

    output = ("output", "engine_fusion_bench's output (rank 0's lines)")

    def ingest(self, args):
        lines = common.rank0_lines(common.read_text(args.output))
        head = next((line for line in lines if line.startswith("engine_fusion_bench:")), "")
        m = re.search(r"(\d+) ranks, (\d+) float32 tensors x (\d+) B", head)
        if m is None:
            raise SystemExit(f"{args.output}: no 'engine_fusion_bench:' line")
        results = {
            "ranks": int(m.group(1)),
            "tensors": int(m.group(2)),
            "bytes_each": int(m.group(3)),
            "raw_us": figure(
                lines, "raw allreduce of " + str(int(m.group(2)) * int(m.group(3))) + " B"
            ),
            "spans_us": figure(lines, "tensors in place"),
            "fused_us": figure(lines, "engine step, fused"),
            "fused_over_raw": figure(lines, "fused over raw, per round"),
            "overhead_us": figure(lines, "engine step, 4 B tensors"),
            "enqueue_us": figure(lines, "of which enqueueing"),
            "unfused_us": figure(lines, "engine step, fusion off"),
            "idle_cpu_pct": figure(lines, "idle engine CPU"),
        }
        return [args.command], results, None

    def render(self, data):
        r = data["results"]
        step = f"{r['tensors']} x {common.size_label(r['bytes_each'])}"
        total = common.size_label(r["tensors"] * r["bytes_each"])
        rows = [
            [f"one raw allreduce of {total}", fmt_time(r["raw_us"]), ""],
            [
                f"the {r['tensors']} tensors reduced in place, no engine",
                fmt_time(r["spans_us"]),
                "",
            ],
            [f"a fused step ({step})", fmt_time(r["fused_us"]), ""],
            ["fused step over one raw allreduce", fmt(r["fused_over_raw"], 2, "x"), "within 1.3x"],
            [
                f"the engine's own cost per step ({r['tensors']} x 4 B)",
                fmt_time(r["overhead_us"]),
                "under 100 us",
            ],
            [f"of which the {r['tensors']} `allreduce_async` calls", fmt_time(r["enqueue_us"]), ""],
            [
                "the fused step with fusion off (HORA_FUSION_THRESHOLD=0)",
                fmt_time(r.get("unfused_us")),
                "",
            ],
            ["idle engine", fmt(r["idle_cpu_pct"], 2, "% of a core"), "under 1%"],
        ]
        return (
            self.intro(data, f"; {r['ranks']} ranks under horarun, builtin backend")
            + table(["figure", "value", "target"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )

    def headline(self, data):
        r = data["results"]
        return [
            (
                "engine: fused 200-tensor step over one raw allreduce",
                fmt(r["fused_over_raw"], 2, "x"),
            ),
            ("engine: its own cost per 200-tensor step", fmt_time(r["overhead_us"])),
        ]


class DeviceEngineFake(common.Section):
    name = "device_engine"
    title = "Engine: device path on the fake runtime"
    about = (
        "`device_engine_bench --fake-device` times the engine's path for GPU tensors without a "
        "GPU: the fake CUDA runtime and NCCL communicator of the tests, whose calls spin the "
        "calling thread for a kernel launch (5 us), an event record, query or wait (2 us), a "
        "copy's enqueue (5 us) and NCCL's enqueue (10 us), and whose streams run each kernel "
        "for 3 us and NCCL's allreduce for 8 us of device time, so the figures are the "
        "host-side critical path as on a GPU. Two engines alternate in each round: `host "
        "waits` is the path before the finalizer (a host wait for the pack, NCCL's blocking "
        "allreduce, the collective at one rank too, and the engine thread waiting for each "
        "bucket), `finalizer` the engine thread only enqueueing while a finalizer thread "
        "completes the handles. A step is 200 float32 tensors of 256 B enqueued back to back "
        "and waited; a lone tensor is one enqueue to its completion. In-process ranks; times "
        "are medians of the rounds' medians, ratios medians of each round's own ratio (what "
        "compares on a busy machine). On a 2-core machine the step is bound by the enqueueing "
        "thread (each device tensor's ready event is recorded there, 2 us each) and by the "
        "cores the engine's and the finalizer's threads share with it; the lone tensor is the "
        "path's latency. At 2 ranks the negotiation's burst window dominates both, and single "
        "rounds of either path stall for milliseconds on the loaded cores."
    )

    output = ("output", "device_engine_bench's output")

    def ingest(self, args):
        lines = common.read_text(args.output).splitlines()
        head = next((line for line in lines if line.startswith("device_engine_bench:")), "")
        m = re.search(r"(\d+) float32 tensors x (\d+) B", head)
        if m is None:
            raise SystemExit(f"{args.output}: no 'device_engine_bench:' line")
        rows = []
        for n in sorted({int(x) for x in re.findall(r"^ranks (\d+):", "\n".join(lines), re.M)}):
            p = f"ranks {n}: "
            rows.append(
                {
                    "ranks": n,
                    "step_waits_us": figure(lines, p + f"step of {m.group(1)}, host waits"),
                    "step_finalizer_us": figure(lines, p + f"step of {m.group(1)}, finalizer"),
                    "enqueue_waits_us": figure(lines, p + "step's enqueueing, host waits"),
                    "enqueue_finalizer_us": figure(lines, p + "step's enqueueing, finalizer"),
                    "step_ratio": figure(lines, p + "step, host waits over finalizer"),
                    "lone_waits_us": figure(lines, p + "lone tensor, host waits"),
                    "lone_finalizer_us": figure(lines, p + "lone tensor, finalizer"),
                    "lone_ratio": figure(lines, p + "lone tensor, host waits over finalizer"),
                }
            )
        results = {"tensors": int(m.group(1)), "bytes_each": int(m.group(2)), "rows": rows}
        return [args.command], results, None

    def render(self, data):
        r = data["results"]
        rows = []
        for row in r["rows"]:
            rows.append(
                [
                    str(row["ranks"]),
                    f"{fmt_time(row['step_waits_us'])} / {fmt_time(row['step_finalizer_us'])}",
                    f"{fmt_time(row['enqueue_waits_us'])} / "
                    f"{fmt_time(row['enqueue_finalizer_us'])}",
                    fmt(row["step_ratio"], 2, "x"),
                    f"{fmt_time(row['lone_waits_us'])} / {fmt_time(row['lone_finalizer_us'])}",
                    fmt(row["lone_ratio"], 2, "x"),
                ]
            )
        header = [
            "ranks",
            f"step of {r['tensors']}, host waits / finalizer",
            "of which enqueueing",
            "step ratio",
            "lone tensor, host waits / finalizer",
            "lone ratio",
        ]
        return (
            self.intro(data) + table(header, rows) + [""] + common.commands_block(data["commands"])
        )

    def headline(self, data):
        one = next((row for row in data["results"]["rows"] if row["ranks"] == 1), None)
        if one is None:
            return []
        return [
            (
                "engine, GPU tensors (fake runtime): a lone tensor, host waits over finalizer",
                fmt(one["lone_ratio"], 2, "x"),
            )
        ]


class EngineLatency(common.Section):
    name = "engine_latency"
    title = "A lone allreduce through the engine"
    about = (
        "`hora-bench --through-engine` times what a trainer sees: each call's buffer split into up "
        "to 16 named tensors, enqueued and waited (negotiation, fusion, the selector's algorithm "
        "and the handles' completion), beside the same allreduce straight on the communicator. "
        "The target is 20 us for a small call."
    )

    output = ("csv", "hora-bench --through-engine --csv output")

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--txt", help="rank 0's output, for the machine line")

    def ingest(self, args):
        sizes = {}
        for r in csv_rows(args.csv):
            key = {"hora-engine": "engine_us", "hora": "raw_us"}.get(r["impl"])
            if key:
                sizes.setdefault(int(r["size_bytes"]), {})[key] = float(r["time_us"])
        rows = [dict(size=size, **t) for size, t in sorted(sizes.items())]
        machine = hora_bench_machine(args.txt) if args.txt else None
        return [args.command], {"rows": rows}, machine

    def render(self, data):
        rows = [
            [
                common.size_label(r["size"]),
                fmt_time(r.get("engine_us"), 2),
                fmt_time(r.get("raw_us"), 2),
            ]
            for r in data["results"]["rows"]
        ]
        return (
            self.intro(data, "; 2 ranks under horarun")
            + table(["size", "through the engine", "raw"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )

    def headline(self, data):
        small = data["results"]["rows"][0]
        return [
            (
                f"a lone {common.size_label(small['size'])} allreduce through the engine",
                fmt_time(small.get("engine_us"), 2),
            )
        ]


def run_line(line):
    """samples/s, step ms and the wait after backward of a trainer_scaling_bench line."""
    m = re.search(
        r": ([0-9.]+) samples/s, step ([0-9.]+) ms, waiting for allreduce after "
        r"backward ([0-9.]+) ms",
        line,
    )
    return tuple(float(v) for v in m.groups()) if m else (None, None, None)


class TrainerScaling(common.Section):
    name = "trainer_scaling"
    title = "Training: the reference trainer"
    about = (
        "The C++ reference trainer (MLP 1024-2048-2048-1024-10, 8.4M parameters, 33.6 MB of "
        "float32 gradients per step, per-rank batch 64, SGD with momentum, one BLAS thread per "
        "rank) at 2 ranks against one plain process without hora. Scaling efficiency = 2-rank "
        "samples/s / (2 x 1-process samples/s), with allreduces overlapped with backward and "
        "with them all after backward; the share hidden = 1 - wait after backward (overlapped) "
        "/ wait after backward (not overlapped). The last rows show what two processes cost "
        "each other on this machine without any communication."
    )

    output = ("output", "trainer_scaling.sh's output")

    def ingest(self, args):
        backends, sharing, current = [], {}, None
        for line in common.read_text(args.output).splitlines():
            m = re.match(r"backend (\S+)", line)
            if m:
                current = {"backend": m.group(1), "runs": []}
                backends.append(current)
            elif line.strip().startswith("ranks ") and current is not None:
                current["runs"].append(run_line(line))
            elif line.startswith("sharing"):
                current = None
            elif line.strip().startswith("alone:"):
                sharing["alone_step_ms"] = run_line(line)[1] or figure([line], "step")
            elif line.strip().startswith("two at once:"):
                sharing["pair_step_ms"] = figure([line], "step")
            elif "alone;" in line and "memcpy" in line:
                rates = [float(v) for v in re.findall(r"memcpy ([0-9.]+) GB/s", line)]
                sharing["memcpy_alone_gbs"] = rates[0]
                sharing["memcpy_each_gbs"] = [min(rates[1:]), max(rates[1:])]
        results = {"backends": [self.summary(b) for b in backends if len(b["runs"]) == 4]}
        if sharing.get("alone_step_ms") and sharing.get("pair_step_ms"):
            sharing["step_ratio"] = sharing["pair_step_ms"] / sharing["alone_step_ms"]
        results["sharing"] = sharing
        return [args.command], results, None

    @staticmethod
    def summary(b):
        (one, _, _), (big, _, _), (two, _, wait), (late, _, wait_late) = b["runs"]
        return {
            "backend": b["backend"],
            "one_process": one,
            "batch128": big,
            "two_ranks": two,
            "efficiency_pct": 100 * two / (2 * one),
            "efficiency_after_pct": 100 * late / (2 * one),
            "vs_batch128": two / big,
            "hidden_pct": 100 * (1 - wait / wait_late) if wait_late else None,
            "wait_ms": wait,
            "wait_after_ms": wait_late,
        }

    def render(self, data):
        rows = []
        for b in data["results"]["backends"]:
            rows.append(
                [
                    b["backend"],
                    fmt(b.get("one_process"), 0, thousands=True),
                    fmt(b.get("two_ranks"), 0, thousands=True),
                    (
                        f"{fmt(b['efficiency_pct'], 1, '%')} "
                        f"({fmt(b.get('efficiency_after_pct'), 1, '%')})"
                    ),
                    fmt(b.get("vs_batch128"), 2, "x"),
                    (
                        f"{fmt(b.get('hidden_pct'), 0, '%')} ({fmt(b.get('wait_ms'), 1)} of "
                        f"{fmt(b.get('wait_after_ms'), 1)} ms waited)"
                    ),
                ]
            )
        lines = self.intro(data)
        lines += table(
            [
                "backend",
                "1 process, samples/s",
                "2 ranks, samples/s",
                "scaling efficiency (reducing after backward)",
                "2 ranks / 1 process at batch 128",
                "hidden behind backward",
            ],
            rows,
        )
        s = data["results"].get("sharing") or {}
        if s:
            lines += [
                "",
                (
                    f"Two plain processes at once: each step "
                    f"{fmt(s.get('step_ratio'), 2)}x its time alone; memcpy "
                    f"{fmt(s.get('memcpy_alone_gbs'), 1)} GB/s alone, "
                    f"{fmt(s.get('memcpy_each_gbs'), 1)} GB/s each of two at once."
                ),
            ]
        return [*lines, "", *common.commands_block(data["commands"])]

    def headline(self, data):
        b = data["results"]["backends"][0]
        return [
            ("reference trainer, scaling efficiency at 2 ranks", fmt(b["efficiency_pct"], 1, "%"))
        ]


def bench_figures(path):
    """{key: value} of the "process_sets_bench: key value" lines rank 0 printed."""
    figures = {}
    for line in common.rank0_lines(common.read_text(path)):
        m = re.match(r"process_sets_bench: (\w+) ([0-9.]+)$", line)
        if m:
            figures[m.group(1)] = float(m.group(2))
    return figures


class ProcessSets(common.Section):
    name = "process_sets"
    title = "Process sets"
    about = (
        "`process_sets_bench` under horarun: a blocking 4-byte allreduce through the engine on a "
        "set of two ranks in a job of four (the other set idle) against the same call on a "
        "two-rank job, and two sets of two each running ten 16 MiB allreduces at once against "
        "one set after the other. Each set has its own engine and communicator; the busy-cores "
        "figure is the job's CPU time over the wall time, which shows what bounds the side-by-side "
        "run: the sets share the machine's cores."
    )

    def add_arguments(self, parser):
        parser.add_argument("--command", action="append", required=True, help="each run's command")
        parser.add_argument("two", help="the 2-rank run's output")
        parser.add_argument("four", help="the 4-rank run's output")

    def ingest(self, args):
        results = {"two": bench_figures(args.two), "four": bench_figures(args.four)}
        return args.command, results, None

    def render(self, data):
        two, four = data["results"]["two"], data["results"]["four"]
        small_ratio = four["small_us"] / two["small_us"]
        rows = [
            [
                "4 B allreduce, blocking",
                fmt_time(two["small_us"], 2) + " (2-rank job)",
                fmt_time(four["small_us"], 2) + " (set of 2 in a 4-rank job)",
                f"{small_ratio:.2f}x",
            ],
            [
                "two sets x ten 16 MiB allreduces",
                f"{four['sequential_ms']:.1f} ms one after the other "
                f"({four['sequential_cores']:.2f} cores busy)",
                f"{four['concurrent_ms']:.1f} ms at once "
                f"({four['concurrent_cores']:.2f} cores busy)",
                f"{four['ratio']:.2f}x",
            ],
        ]
        return (
            self.intro(data)
            + table(["figure", "baseline", "process sets", "ratio"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )

    def headline(self, data):
        two, four = data["results"]["two"], data["results"]["four"]
        return [
            (
                "a 4 B allreduce on a set of 2 in a 4-rank job, over a 2-rank job",
                f"{four['small_us'] / two['small_us']:.2f}x",
            )
        ]
