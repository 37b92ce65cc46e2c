"""hora-bench's sections: the allreduce sweeps against Gloo and MPI, auto's choice, and
allreduce beside busy cores."""

import csv
import os
import re

from perf import common
from perf.common import fmt, table

SWEEP_SIZES = [8, 1 << 20, 64 << 20, 256 << 20]
# The sweeps of scripts/perf_bench.sh, per rank count: file suffix -> what the run is.
SWEEP_RUNS = ["", "_shm0", "_gloo", "_mpi", "_mpi_reuse"]


def csv_rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [
            r
            for r in csv.DictReader(f)
            if r["placement"] == "out-of-place" and r["available"] == "1"
        ]


def best(rows, impl, size, field):
    """One figure of one implementation at one size: the lowest time_us or the highest
    busbw_gbs; impl "gloo" is the better of Gloo's algorithms. None when absent."""
    values = [
        float(r[field])
        for r in rows
        if int(r["size_bytes"]) == size
        and (r["impl"] == impl or (impl == "gloo" and r["impl"].startswith("gloo-")))
    ]
    if not values:
        return None
    return min(values) if field == "time_us" else max(values)


def hora_bench_machine(txt_path):
    """ "AMD EPYC, 2 cpus" from the "# machine: host, N cpus, MODEL; time" line of a run."""
    if os.path.exists(txt_path):
        for line in common.rank0_lines(common.read_text(txt_path)):
            m = re.match(r"# machine: [^,]*, (\d+) cpus, (.*?);", line)
            if m:
                return f"{m.group(2)}, {m.group(1)} cpus"
    return None


def speedup(hora, other, kind):
    """hora over other as "1.23x": other's time over hora's, or hora's busbw over other's."""
    r = common.ratio(other, hora) if kind == "time" else common.ratio(hora, other)
    return "n/a" if r is None else f"{r:.2f}x"


class AllreduceSweep(common.Section):
    name = "allreduce"
    title = "Allreduce: hora against Gloo and MPI"
    about = (
        "`hora-bench allreduce`, float32 sum on one host, every result checked (#wrong 0). All "
        "implementations of a row run side by side on the same buffers in one run, and each ratio "
        "is taken within that run. busbw is nccl-tests' bus bandwidth in decimal GB/s; the 8 B "
        "row gives the latency in microseconds, its ratios as other time / hora time, so above 1x "
        "means hora is faster. The wire columns are a bound, not a competitor: the bytes a ring "
        "allreduce moves over the same pairs, with no reduction (`--compare wire`); hora / wire "
        "near 1x means the transport is the limit. MPI stock / reuse: Open MPI as installed, and "
        "with glibc keeping freed memory (`MALLOC_MMAP_MAX_=0`), which spares Open MPI first "
        "touches of fresh scratch from 64 MiB; hora / MPI is against the better of the two."
    )

    def __init__(self, rank_counts=(2, 4)):
        self.rank_counts = rank_counts

    def files(self, bench_dir, np, run):
        base = os.path.join(bench_dir, f"allreduce_np{np}{run}")
        return {ext: f"{base}.{ext}" for ext in ("csv", "txt", "cmd", "svg")}

    def load(self, bench_dir):
        """{np: {run: rows}} with the machine and the commands, or None without any file."""
        data = {"runs": {}, "commands": [], "machine": None}
        for np in self.rank_counts:
            for run in SWEEP_RUNS:
                f = self.files(bench_dir, np, run)
                rows = csv_rows(f["csv"])
                if not rows:
                    continue
                data["runs"].setdefault(np, {})[run] = rows
                if os.path.exists(f["cmd"]):
                    data["commands"] += common.read_text(f["cmd"]).strip().splitlines()
                data["machine"] = data["machine"] or hora_bench_machine(f["txt"])
        return data if data["runs"] else None

    def row(self, runs, size):
        kind = "time" if size == 8 else "busbw"
        field = "time_us" if kind == "time" else "busbw_gbs"
        digits = 1 if kind == "time" else 2

        def get(run, impl):
            return best(runs.get(run, []), impl, size, field)

        h = get("", "hora")
        hm, mm = get("_mpi", "hora"), get("_mpi", "mpi")
        hr, mr = get("_mpi_reuse", "hora"), get("_mpi_reuse", "mpi")
        # hora against MPI within the run whose MPI did better.
        use_reuse = mm is None or (mr is not None and (mr < mm if kind == "time" else mr > mm))
        vs_mpi = speedup(hr, mr, kind) if use_reuse else speedup(hm, mm, kind)
        hs, gs, ws = get("_shm0", "hora"), get("_shm0", "gloo"), get("_shm0", "wire")
        hg, gg, wg = get("_gloo", "hora"), get("_gloo", "gloo"), get("_gloo", "wire")
        algos = " / ".join(fmt(get("", a), digits) for a in ("hora-ring", "hora-tree", "hora-rd"))
        label = "8 B (latency)" if size == 8 else common.size_label(size)
        return [
            label,
            fmt(h, digits, " us" if kind == "time" else ""),
            algos,
            fmt(get("", "gloo"), digits),
            speedup(h, get("", "gloo"), kind),
            f"{fmt(mm, digits)} / {fmt(mr, digits)}",
            vs_mpi,
            speedup(hs, gs, kind),
            f"{fmt(ws, digits)} ({speedup(hs, ws, kind)})",
            speedup(hg, gg, kind),
            f"{fmt(wg, digits)} ({speedup(hg, wg, kind)})",
        ]

    def render(self, data):
        lines = self.intro(data)[:-1]
        header = [
            "size",
            "hora (auto)",
            "ring / tree / rd",
            "Gloo best",
            "hora / Gloo",
            "MPI stock / reuse",
            "hora / MPI (better)",
            "HORA_SHM=0 hora / Gloo",
            "HORA_SHM=0 wire (hora / wire)",
            "hora over Gloo pairs / Gloo",
            "Gloo pairs wire (hora / wire)",
        ]
        for np, runs in sorted(data["runs"].items()):
            plots = [
                f"[{label}](bench/allreduce_np{np}{run}.svg)"
                for label, run in (("with MPI", "_mpi_reuse"), ("HORA_SHM=0", "_shm0"))
                if run in runs
            ]
            lines += [
                "",
                f"**{np} ranks** ({', '.join(plots)}):" if plots else f"**{np} ranks**:",
                "",
            ]
            lines += table(header, [self.row(runs, size) for size in SWEEP_SIZES])
            lines += ["", f"![allreduce busbw at {np} ranks](bench/allreduce_np{np}.svg)"]
        lines += [
            "",
            (
                "Commands (the full tables rank 0 printed are beside the plots, "
                "docs/bench/allreduce_np*.txt):"
            ),
            "",
        ]
        lines += common.commands_block(data["commands"])
        return lines

    def headline(self, data):
        runs = data["runs"].get(2)
        if not runs:
            return []
        r8, r64 = self.row(runs, 8), self.row(runs, 64 << 20)
        return [
            ("allreduce latency, 8 B, 2 ranks", f"{r8[1]} ({r8[4]} Gloo, {r8[6]} MPI)"),
            ("allreduce busbw, 64 MiB, 2 ranks", f"{r64[1]} GB/s ({r64[4]} Gloo, {r64[6]} MPI)"),
        ]


class AutoChoice(common.Section):
    name = "allreduce_auto"
    title = "Auto's choice"
    about = (
        "With `HORA_ALLREDUCE_ALGO=auto` (the default) the selector picks an algorithm per size "
        "from figures measured at init on the job's own communicator (`HORA_CALIBRATE_MS`). "
        "hora-bench's `--compare hora` times auto beside each of hora's algorithms and reports "
        "`auto/algo`: the fastest fixed algorithm's time over auto's, per size (the median over "
        "rounds of the ratio within each round). The target is >= 0.90x at every size."
    )

    def add_arguments(self, parser):
        common.add_runs_argument(
            parser, "LAUNCHER", "OUTPUT", "a launcher's run: its command and rank 0's output"
        )

    def ingest(self, args):
        launchers, machine = [], None
        for launcher, command, output in args.run:
            text = common.read_text(output)
            m = re.search(
                r"# auto/algo\s*: >= 0\.90x at (\d+) of (\d+) sizes; worst "
                r"([0-9.]+)x at (\d+) B",
                text,
            )
            if m is None:
                raise SystemExit(f"{output}: no '# auto/algo' line (run with --compare hora)")
            launchers.append(
                {
                    "launcher": launcher,
                    "command": command,
                    "within": int(m.group(1)),
                    "sizes": int(m.group(2)),
                    "worst": float(m.group(3)),
                    "worst_size": int(m.group(4)),
                }
            )
            machine = machine or hora_bench_machine(output)
        return [r["command"] for r in launchers], {"launchers": launchers}, machine

    def render(self, data):
        rows = []
        for r in data["results"]["launchers"]:
            worst = fmt(r["worst"], 2, "x")
            if r.get("worst_size") is not None:
                worst += f" at {common.size_label(r['worst_size'])}"
            rows.append([r["launcher"], f"{r['within']} of {r['sizes']}", worst])
        return (
            self.intro(data)
            + table(["launcher", "sizes with auto/algo >= 0.90x", "worst"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )

    def headline(self, data):
        parts = [
            f"{r['within']} of {r['sizes']} sizes under {r['launcher']}"
            for r in data["results"]["launchers"]
        ]
        return [("auto within 10% of hora's fastest algorithm", ", ".join(parts))]


class BusyCores(common.Section):
    name = "allreduce_load"
    title = "Allreduce beside busy cores"
    about = (
        "`--load 1` starts one busy compute thread per rank beside the job, as a training "
        "step's compute would; waits spin only while spinning pays, then sleep. The time of "
        "auto's allreduce at 2 ranks, idle and loaded."
    )

    def add_arguments(self, parser):
        common.add_runs_argument(
            parser, "idle|loaded", "CSV", "hora-bench --csv output without and with --load 1"
        )

    def ingest(self, args):
        times = {}
        for kind, _, path in args.run:
            for r in csv_rows(path):
                if r["impl"] == "hora":
                    times.setdefault(int(r["size_bytes"]), {})[kind + "_us"] = float(r["time_us"])
        rows = [dict(size=size, **t) for size, t in sorted(times.items())]
        return [command for _, command, _ in args.run], {"rows": rows}, None

    def render(self, data):
        rows = [
            [
                common.size_label(r["size"]),
                common.fmt_time(r.get("idle_us")),
                common.fmt_time(r.get("loaded_us")),
            ]
            for r in data["results"]["rows"]
        ]
        return (
            self.intro(data)
            + table(["size", "idle", "one busy thread per rank"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )
