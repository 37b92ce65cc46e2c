#!/usr/bin/env python3
"""Writes docs/performance.md and the README's summary of it from the benchmarks' data files
in docs/bench/, without running anything; and turns a benchmark's own output into its data
file.

    python3 scripts/perf_report.py [--check]       # docs/performance.md + README's summary
    python3 scripts/perf_report.py ingest SECTION [ARGS...] # docs/bench/SECTION.json

Every section of the page is one benchmark (scripts/perf/*.py): a table from its data file,
the machine it ran on, the command that produced it, and the plot where hora-bench drew one.
The allreduce sweeps read hora-bench's CSV files (docs/bench/allreduce_np*.csv); the others a
JSON file each (docs/bench/<section>.json, see scripts/perf/common.py), which `ingest` writes
from the benchmark's output. scripts/perf_bench.sh runs the benchmarks, ingests and renders.
--check writes nothing and fails when either file differs from what it would write.
"""

import argparse
import difflib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from perf import adasum, autotune, collectives, common, elastic, engine, frameworks, hosts, kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = [
    collectives.AllreduceSweep(),
    collectives.AutoChoice(),
    collectives.BusyCores(),
    engine.EngineFusion(),
    engine.DeviceEngineFake(),
    engine.EngineLatency(),
    engine.ProcessSets(),
    adasum.Adasum(),
    adasum.AdasumConvergence(),
    engine.TrainerScaling(),
    autotune.Autotune(),
    frameworks.TorchScaling(),
    frameworks.KerasScaling(),
    frameworks.BindingOverhead(),
    elastic.ElasticRecovery(),
    kernels.CpuKernels(),
    kernels.Gpu(),
    hosts.Multihost(),
    hosts.ScaleModel(),
]
SUMMARY_BEGIN = "<!-- perf-summary:begin (scripts/perf_report.py writes this table) -->"
SUMMARY_END = "<!-- perf-summary:end -->"

INTRO = """\
# Performance

Where each benchmark stands now: per benchmark a table, the machine it ran on and the command
that produced it. `python3 scripts/perf_report.py` writes this page (and the summary table of
the README) from the benchmarks' files in docs/bench/; `bash scripts/perf_bench.sh` reruns the
benchmarks first. Do not edit this page by hand.

The machines are small cloud VMs (2 vCPUs) unless a section says otherwise, and their speed
moves between runs: ratios taken within one run compare, absolute figures from different
machines do not. A figure written a-b is the spread of repeated runs. Memory bounds the
shared-memory figures on such machines: an allreduce of private buffers over shared memory
copies in, reduces and copies out, about two memcpys per byte at 2 ranks, so its ceiling is
about half of memcpy's rate (`build/benchmarks/shm_allreduce_bench --phases` shows the phases
on a given machine)."""


def render_page(bench_dir):
    lines = [INTRO]
    for section in SECTIONS:
        data = section.load(bench_dir)
        lines += ["", f"## {section.title}", ""]
        if data is None:
            lines += [f"Not measured yet: {section.rerun}."]
        else:
            lines += section.render(data)
    return "\n".join(lines) + "\n"


def render_summary(bench_dir):
    rows = []
    for section in SECTIONS:
        data = section.load(bench_dir)
        if data is None:
            continue
        for figure, value in section.headline(data):
            rows.append([figure, value, data.get("machine") or ""])
    lines = [SUMMARY_BEGIN, ""]
    lines += common.table(["figure", "now", "machine"], rows)
    plot = "![allreduce busbw at 2 ranks: hora's algorithms, Gloo](docs/bench/allreduce_np2.svg)"
    lines += ["", plot, "", SUMMARY_END]
    return "\n".join(lines)


def with_summary(readme, summary):
    """The README's text with the summary between the markers replaced."""
    begin, end = readme.find(SUMMARY_BEGIN), readme.find(SUMMARY_END)
    if begin < 0 or end < begin:
        raise SystemExit(
            f"perf_report: README.md has no summary markers ({SUMMARY_BEGIN} ... {SUMMARY_END})"
        )
    return readme[:begin] + summary + readme[end + len(SUMMARY_END) :]


def write_or_check(path, text, check):
    old = common.read_text(path) if os.path.exists(path) else ""
    if old == text:
        return True
    if check:
        diff = difflib.unified_diff(
            old.splitlines(), text.splitlines(), path, "generated", lineterm="", n=1
        )
        print("\n".join(list(diff)[:40]))
        print(
            f"perf_report: {os.path.relpath(path, ROOT)} is not what scripts/perf_report.py "
            "writes from docs/bench/ (run it)"
        )
        return False
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"perf_report: wrote {os.path.relpath(path, ROOT)}")
    return True


def render(args):
    page = render_page(args.bench_dir)
    readme = with_summary(common.read_text(args.readme), render_summary(args.bench_dir))
    ok = write_or_check(args.out, page, args.check)
    ok = write_or_check(args.readme, readme, args.check) and ok
    if ok and args.check:
        print("perf_report: docs/performance.md and the README's summary are current")
    return 0 if ok else 1


def ingest(argv):
    p = argparse.ArgumentParser(prog="perf_report.py ingest")
    sub = p.add_subparsers(dest="section", required=True)
    for section in SECTIONS:
        q = sub.add_parser(section.name, help=section.title)
        q.add_argument("--bench-dir", default=os.path.join(ROOT, "docs", "bench"))
        section.add_arguments(q)
        q.set_defaults(section_object=section)
    args = p.parse_args(argv)
    commands, results, machine = args.section_object.ingest(args)
    path = common.save(args.bench_dir, args.section, commands, results, machine)
    print(f"perf_report: wrote {os.path.relpath(path, ROOT)}")
    return 0


def main(argv):
    if argv[:1] == ["ingest"]:
        return ingest(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="write nothing; fail when stale")
    p.add_argument("--bench-dir", default=os.path.join(ROOT, "docs", "bench"))
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    p.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    return render(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
