"""What every section of docs/performance.md shares: its data file, the machine, formatting.

A section's data file is docs/bench/<name>.json:

    {"machine": "AMD EPYC, 2 cpus", "commands": ["..."], "results": {...}}

`results` is the section's own; a figure in it is a number, a [low, high] pair (the spread of
repeated runs) or null (not measured). Sections read these files and write Markdown; their
`ingest` turns a benchmark's own output into one.
"""

import json
import os
import re
import subprocess
import textwrap


def load(bench_dir, name):
    """The section's data, or None when docs/bench/<name>.json does not exist."""
    path = os.path.join(bench_dir, name + ".json")
    return read_json(path) if os.path.exists(path) else None


def save(bench_dir, name, commands, results, machine=None):
    path = os.path.join(bench_dir, name + ".json")
    data = {"machine": machine or this_machine(), "commands": list(commands), "results": results}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    return path


def this_machine():
    """ "<CPU model>, <N> cpus" of the machine running this (where the benchmark just ran)."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cpus"


def rank0_lines(text):
    """The lines rank 0 printed, without horarun's "[0]<stdout>: " tag; untagged lines as is."""
    lines = []
    for line in text.splitlines():
        m = re.match(r"^\[(\d+)\]<std(?:out|err)>: ?(.*)$", line)
        if m is None:
            lines.append(line)
        elif m.group(1) == "0":
            lines.append(m.group(2))
    return lines


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def fmt(value, digits=2, unit="", thousands=False):
    """A figure as text: 1.23, a spread 1.12-1.14, or "-" when not measured."""
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        lo, hi = value
        if fmt(lo, digits, thousands=thousands) == fmt(hi, digits, thousands=thousands):
            return fmt(lo, digits, unit, thousands)
        low, high = fmt(lo, digits, thousands=thousands), fmt(hi, digits, thousands=thousands)
        return f"{low}-{high}{unit}"
    text = f"{value:,.{digits}f}" if thousands else f"{value:.{digits}f}"
    return text + unit


def fmt_time(us, digits=1):
    """A time in microseconds as "12.3 us" or, from 1 ms, "4.5 ms" (spreads alike)."""
    values = list(us) if isinstance(us, (list, tuple)) else [us]
    if us is not None and max(values) >= 1000:
        return fmt(scale(us, 1e-3), 2 if max(values) < 10000 else 1, " ms")
    whole = us is not None and all(float(v).is_integer() for v in values)
    return fmt(us, 0 if whole else digits, " us")


def fmt_ratio(value, unit=""):
    """A ratio with two decimals below 10 and none from 10: 1.84, 6.60, 34."""
    top = max(value) if isinstance(value, (list, tuple)) else value
    return fmt(value, 2 if top is None or top < 10 else 0, unit)


def fmt_added(value, digits=1, unit=""):
    """An amount added: "+3.2", "+3.2-3.5", or "-" when not measured."""
    return "-" if value is None else "+" + fmt(value, digits, unit)


def scale(value, factor):
    """A figure (number, spread or None) times factor."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [v * factor for v in value]
    return value * factor


def ratio(a, b):
    """a / b for plain numbers; None when either is missing or b is zero."""
    if a is None or b is None or isinstance(a, list) or isinstance(b, list) or b == 0:
        return None
    return a / b


def size_label(size_bytes):
    """8 B, 16 KiB, 64 MiB; 3.1 MiB for a size that is not a whole number of its unit."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size_bytes >= 1 << shift:
            whole = size_bytes % (1 << shift) == 0
            return (
                f"{size_bytes >> shift} {unit}"
                if whole
                else f"{size_bytes / (1 << shift):.1f} {unit}"
            )
    return f"{size_bytes} B"


def table(header, rows):
    """Markdown table lines."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def commands_block(commands):
    return ["```sh", *list(commands), "```"]


def run_output(cmd):
    """stdout of a command, or None when it fails."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def add_runs_argument(parser, kind, output, help_text):
    """--run KIND COMMAND OUTPUT, once per run of a benchmark that ingest combines."""
    parser.add_argument(
        "--run",
        nargs=3,
        action="append",
        required=True,
        metavar=(kind, "COMMAND", output),
        help=help_text,
    )


class Section:
    """One benchmark's part of docs/performance.md.

    name: the data file's stem in docs/bench/; title: the page's heading. Subclasses write
    `render(data)` (Markdown lines from the data), `headline(data)` (rows of the README's
    summary: (figure, value)), and `add_arguments(parser)` / `ingest(args)` (the data from
    the benchmark's own output), where the benchmark has an output to read.
    """

    name = ""
    title = ""
    about = ""  # What the benchmark measures, shown under the heading.

    @property
    def rerun(self):
        """How to produce the section's data, for a page without it."""
        return f"`bash scripts/perf_bench.sh {self.name}` writes docs/bench/{self.name}.json"

    def load(self, bench_dir):
        return load(bench_dir, self.name)

    def intro(self, data, machine_note=""):
        """`about` wrapped, then the machine line (none without data), each followed by a
        blank line."""
        lines = [*textwrap.wrap(self.about, 96, break_on_hyphens=False), ""]
        if data is not None:
            lines += [f"Machine: {data.get('machine') or 'not recorded'}{machine_note}.", ""]
        return lines

    def render(self, data):
        raise NotImplementedError

    def headline(self, data):
        return []

    # What `ingest` reads when it is one file: (argument name, help). With it, `ingest` takes
    # that file and --command (the command that produced it, as the page shows it).
    output = None

    def add_arguments(self, parser):
        if self.output:
            parser.add_argument(
                "--command", required=True, help="the command that produced the output, as shown"
            )
            parser.add_argument(self.output[0], help=self.output[1])

    def ingest(self, args):
        raise NotImplementedError(f"{self.name}: no ingest")
