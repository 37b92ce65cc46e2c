"""HORA_AUTOTUNE=1 against a sweep of hand-set configurations in the same run: the engine's
200 x 16 KiB step (benchmarks/autotune_bench.cc) and the PyTorch MLP step
(benchmarks/autotune_torch.sh over examples/pytorch/synthetic_benchmark.py)."""

import re
import statistics

from perf import common
from perf.common import fmt, fmt_time, table

TUNED = ("defaults", "fusion 64 KiB", "fusion off")


def engine_results(path):
    """autotune_bench's rank-0 lines: hand-set figures, best, and each tuned run."""
    lines = common.rank0_lines(common.read_text(path))
    head = next((line for line in lines if line.startswith("autotune_bench:")), "")
    m = re.search(
        r"(\d+) ranks, (\d+) float32 tensors x (\d+) B per step, budget (\d+) steps, "
        r"(\d+) reps",
        head,
    )
    if m is None:
        raise SystemExit(f"{path}: no 'autotune_bench:' line")
    ranks, tensors, bytes_each, budget, reps = map(int, m.groups())
    hand, tuned, best = {}, {}, None
    for line in lines:
        h = re.match(r"\s*hand-set (.+?)\s+([0-9.]+) us$", line)
        if h:
            hand[h.group(1)] = float(h.group(2))
        b = re.match(r"\s*best hand-set per rep\s+([0-9.]+) us", line)
        if b:
            best = float(b.group(1))
        t = re.match(
            r"\s*tuned from (.+?)\s+([0-9.]+) us\s+best/tuned ([0-9.]+) \[([0-9.]+) - ([0-9.]+)\]; "
            r"converged (\d) at step (\d+) of \d+; last rep chose fusion (\d+) B, "
            r"cycle ([0-9.e+-]+) ms, cache (on|off)",
            line,
        )
        if t:
            tuned[t.group(1)] = {
                "us": float(t.group(2)),
                "ratio": float(t.group(3)),
                "ratio_lo": float(t.group(4)),
                "ratio_hi": float(t.group(5)),
                "converged": t.group(6) == "1",
                "converged_step": int(t.group(7)),
                "fusion": int(t.group(8)),
                "cycle_ms": float(t.group(9)),
                "cache": t.group(10) == "on",
            }
    return {
        "ranks": ranks,
        "tensors": tensors,
        "bytes_each": bytes_each,
        "budget": budget,
        "reps": reps,
        "hand": hand,
        "best_us": best,
        "tuned": tuned,
    }


def torch_results(path):
    """autotune_torch.sh's lines: per rep, img/sec per rank of each run; ratios per rep."""
    reps, choice = [], {}
    for line in common.read_text(path).splitlines():
        if line.startswith("== rep"):
            reps.append({})
        m = re.match(r"(.+?): ([0-9.]+) img/sec per rank", line)
        if m and reps:
            reps[-1][m.group(1)] = float(m.group(2))
            last = m.group(1)
        a = re.match(
            r"\s+Autotune: (\w+) \((\d+) samples, last change at step (\d+)\): fusion "
            r"threshold (\d+) B, cycle time ([0-9.]+) ms, response cache (on|off)",
            line,
        )
        if a and reps:
            choice[last] = {
                "converged": a.group(1) == "converged",
                "converged_step": int(a.group(3)),
                "fusion": int(a.group(4)),
                "cycle_ms": float(a.group(5)),
                "cache": a.group(6) == "on",
            }
    if not reps:
        raise SystemExit(f"{path}: no '== rep' lines")
    hand = sorted({k for r in reps for k in r if k.startswith("hand-set ")})
    results = {"reps": len(reps), "hand": {}, "tuned": {}}
    for k in hand:
        results["hand"][k[len("hand-set ") :]] = statistics.median(r[k] for r in reps if k in r)
    results["best"] = statistics.median(max(r[k] for k in hand if k in r) for r in reps)
    for label in TUNED:
        key = "tuned from " + label
        ratios = [r[key] / max(r[k] for k in hand if k in r) for r in reps if key in r]
        if ratios:
            results["tuned"][label] = {
                "img_s": statistics.median(r[key] for r in reps if key in r),
                "ratio": statistics.median(ratios),
                "ratio_lo": min(ratios),
                "ratio_hi": max(ratios),
                **choice.get(key, {}),
            }
    return results


def choice_text(t):
    if not t.get("converged"):
        return "not converged"
    return (
        f"at step {t['converged_step']}: {common.size_label(t['fusion'])}, "
        f"{t['cycle_ms']:g} ms, cache {'on' if t['cache'] else 'off'}"
    )


class Autotune(common.Section):
    name = "autotune"
    title = "Autotune"
    about = (
        "HORA_AUTOTUNE=1 (fusion threshold, cycle time and response cache searched by Bayesian "
        "optimisation; [Configuration](configuration.md#autotune)) against the best of a sweep "
        "of hand-set configurations measured in the same run, alternating, at 2 ranks. Each "
        "tuned run starts from the defaults, from a 64 KiB fusion threshold or from fusion off "
        "(HORA_AUTOTUNE_FREE lets the search move them), is given 300 steps to tune, and is then "
        "timed like the sweep. Target: the tuned step within 5% of the best hand-set one "
        "(best/tuned time, or tuned/best rate, at least 0.95) within 300 steps; from the "
        "defaults never more than 2% below the defaults. Medians over the reps [range]."
    )

    def add_arguments(self, parser):
        parser.add_argument("--command", action="append", required=True, help="each command")
        parser.add_argument("--engine", required=True, help="autotune_bench's output")
        parser.add_argument("--torch", required=True, help="autotune_torch.sh's output")

    def ingest(self, args):
        results = {"engine": engine_results(args.engine), "torch": torch_results(args.torch)}
        return args.command, results, None

    def render(self, data):
        e, t = data["results"]["engine"], data["results"]["torch"]
        step = f"{e['tensors']} x {common.size_label(e['bytes_each'])}"
        rows = [[f"hand-set: {k}", fmt_time(v), ""] for k, v in e["hand"].items()]
        rows.append(["best hand-set (per rep)", fmt_time(e["best_us"]), ""])
        for label, r in e["tuned"].items():
            rows.append(
                [
                    f"tuned from {label}",
                    fmt_time(r["us"]),
                    f"{fmt(r['ratio'], 3)} [{fmt(r['ratio_lo'], 3)} - {fmt(r['ratio_hi'], 3)}]; "
                    + choice_text(r),
                ]
            )
        trows = [[f"hand-set: {k}", fmt(v, 1), ""] for k, v in t["hand"].items()]
        trows.append(["best hand-set (per rep)", fmt(t["best"], 1), ""])
        for label, r in t["tuned"].items():
            trows.append(
                [
                    f"tuned from {label}",
                    fmt(r["img_s"], 1),
                    f"{fmt(r['ratio'], 3)} [{fmt(r['ratio_lo'], 3)} - {fmt(r['ratio_hi'], 3)}]; "
                    + choice_text(r),
                ]
            )
        return [
            *self.intro(data, "; 2 ranks under horarun, builtin backend, taken under load"),
            f"Engine step ({step}, {e['reps']} reps):",
            "",
            *table(["configuration", "step", "best/tuned; what the tuner chose"], rows),
            "",
            f"PyTorch MLP step (img/sec per rank, {t['reps']} reps):",
            "",
            *table(["configuration", "img/sec", "tuned/best; what the tuner chose"], trows),
            "",
            *common.commands_block(data["commands"]),
        ]
