"""Elastic mode's section: recovery in place against a torchrun restart, and a commit's cost
(benchmarks/python/elastic_recovery.py)."""

from perf import common
from perf.common import fmt, table


class ElasticRecovery(common.Section):
    name = "elastic_recovery"
    title = "Elastic mode: recovery in place against a torchrun restart"
    about = (
        "The MLP 1024-2048-2048-1792-10 (9.97M parameters), per-rank batch 32, one thread per "
        "rank, SGD with momentum, 3 ranks; one worker SIGKILLs itself at step 20. hora: "
        "`horarun -np 3 --min-np 2 --max-np 3`, hora.torch.elastic with a commit every step; "
        "the time from the kill to the survivors' next completed step, split into detection "
        "(until the survivors' collective raised, which includes finishing their own step's "
        "compute), re-rendezvous (elastic_reset: report, next generation, init in place), state "
        "sync (model and optimizer from the new rank 0) and the first step at 2 ranks; median "
        "of the repeats. torchrun: the same model under DistributedDataParallel over gloo, "
        "`torchrun --nnodes=1 --nproc-per-node=3 --max-restarts=1`, rank 1 killing itself at "
        "step 20 of the first attempt, each configuration capped at 120 s: default (static "
        "rendezvous), c10d (`--rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:PORT`), standalone "
        "(`--standalone`), c10d-elastic (c10d with `--nnodes=1:3`), and the default with the "
        "workers' init_process_group over a PrefixStore named by TORCHELASTIC_RESTART_COUNT on "
        "the agent's store (a restarted attempt that reads the previous attempt's gloo addresses "
        "from the shared store connects to dead ports: refused, or a hang in connectFullMesh). "
        "Commit cost: blocks of steps with and without a commit per step, alternated in one "
        "elastic job of 3, and commit() timed alone: it copies the parameters and the momentum "
        "(80 MB here) at memory bandwidth, so its share of a step is that copy against the "
        "step's compute, divided by k when committing every k steps."
    )

    output = ("json", "elastic_recovery.py --json output")

    def ingest(self, args):
        raw = common.read_json(args.json)
        return [args.command], raw["results"], None

    def render(self, data):
        r = data["results"]
        h = r["hora"]
        rows = [
            ["hora: detection", fmt(h["detection_s"], 2, " s")],
            ["hora: re-rendezvous", fmt(h["rerendezvous_s"], 2, " s")],
            ["hora: state sync", fmt(h["sync_s"], 2, " s")],
            ["hora: first step at 2 ranks", fmt(h["first_step_s"], 2, " s")],
            [
                f"**hora: kill to the next completed step** (HORA_TIMEOUT_S={r['timeout_s']})",
                f"**{fmt(h['total_s'], 2, ' s')}** (runs {fmt(h['total_range_s'], 2, ' s')})",
            ],
        ]
        for t in r["torchrun"]:
            rows += torchrun_rows(t)
        c = r["commit"]
        rows.append(
            [
                "a step without / with a commit per step (alternated blocks)",
                f"{fmt(c['plain'] * 1e3, 0)} / {fmt(c['commit'] * 1e3, 0)} ms",
            ]
        )
        if "commit_only" in c:
            rows.append(
                [
                    "commit() alone (state copy and hosts-updated check), share of a step",
                    f"{fmt(c['commit_only'] * 1e3, 1)} ms, "
                    f"{fmt(common.scale(common.ratio(c['commit_only'], c['plain']), 100), 1, '%')}",
                ]
            )
            share = common.ratio(c["commit_only"], c["plain"])
            rows.append(
                [
                    "commit() every 5 steps, share of a step",
                    fmt(common.scale(share, 100 / 5), 1, "%"),
                ]
            )
        return (
            self.intro(data)
            + table(["", "time"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )

    def headline(self, data):
        r = data["results"]
        return [
            (
                "elastic recovery, SIGKILL of 1 of 3 to the next step",
                fmt(r["hora"]["total_s"], 1, " s"),
            )
        ]


def torchrun_rows(t):
    """A torchrun configuration's rows: its split and total, or how far its restart got."""
    label = f"torchrun, {t.get('variant', t['rdzv'])}"
    if "total_s" in t:
        return [
            [
                f"{label}: restart / rendezvous / first step",
                f"{fmt(t['restart_s'], 1)} / {fmt(t['rendezvous_s'], 1)} / "
                f"{fmt(t['first_step_s'], 1)} s",
            ],
            [f"**{label}: kill to the next completed step**", f"**{fmt(t['total_s'], 1, ' s')}**"],
        ]
    got = t.get("restarted", {})
    ended = "capped" if t["exit"] is None else f"exit {t['exit']}"
    error = t.get("last_error") or t.get("first_error")
    return [
        [
            label,
            f"never trained again ({ended} after {fmt(t['wall_s'], 0, ' s')}; restarted workers: "
            f"{got.get('started', 0)} started, {got.get('rendezvous', 0)} through "
            f"init_process_group, {got.get('steps', 0)} stepping"
            + (f"; last error: `{error[:160]}`" if error else "")
            + ")",
        ]
    ]
