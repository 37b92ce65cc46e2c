"""Elastic recovery: hora's in-place recovery against a torchrun elastic restart, and what a
commit per step costs, on one 10M-parameter torch model in one run.

The model is the MLP 1024-2048-2048-1792-10 (9.97M parameters), per-rank batch 32, one thread
per rank, SGD with momentum. The driver runs, one after the other on the same machine:
  - recovery: ``horarun -np 3 --min-np 2 --max-np 3`` with hora.torch.elastic (TorchState,
    a commit every step); worker 1 SIGKILLs itself at step 20. From the kill to the
    survivors' next completed step, split into detection (the kill to the failed collective
    raising HorovodInternalError, and the restore), re-rendezvous (hora._core.elastic_reset:
    the reset report, the new generation, init in place) and state sync (broadcasting the
    model and optimizer from the new rank 0), then the first step at 2 ranks. Repeated.
  - torchrun: the same model under DistributedDataParallel (gloo), ``torchrun --nnodes=1
    --nproc-per-node=3 --max-restarts=1``, rank 1 SIGKILLing itself at step 20 of the first
    attempt; from the kill to the restarted job's first completed step, split into the agent's
    restart (the kill to the new workers' start), their rendezvous (init_process_group) and
    the first step. Each rendezvous configuration (the default, c10d with an endpoint, and
    --standalone) is capped at --torchrun-cap seconds.
  - commit cost: ``horarun -np 3`` in elastic mode; blocks of steps without commit and with
    a commit every step (a copy of the model and optimizer state and the hosts-updated check,
    one small broadcast), alternated, repeated; the median step time of each.

    python benchmarks/python/elastic_recovery.py [--build build] [--repeats 3]
        [--parts hora,torchrun,commit] [--torchrun-cap 120] [--json FILE]

--parts runs only those parts; with --json the others' figures are kept from the file.
"""

import argparse
import glob
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
KILL_STEP = 20
STEPS = 30
LAYERS = [1024, 2048, 2048, 1792, 10]


def model_and_data(batch):
    import torch

    torch.manual_seed(0)
    layers = []
    for a, b in itertools.pairwise(LAYERS):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    return model, torch.randn(batch, LAYERS[0]), torch.randint(0, LAYERS[-1], (batch,))


def mark_pid(out):
    with open(os.path.join(out, f"pid-{os.getpid()}"), "w"):
        pass


def record(out, name, payload):
    with open(os.path.join(out, name), "w") as f:
        json.dump(payload, f)


def kill_self(out, worker):
    record(out, "kill.json", {"t": time.time(), "worker": worker})
    os.kill(os.getpid(), signal.SIGKILL)


# ---- workers ---------------------------------------------------------------------------


def hora_recovery_worker(args):
    import torch
    import torch.nn.functional as F

    import hora.torch as hvd
    from hora import _core

    mark_pid(args.out)
    torch.set_num_threads(1)
    hvd.init()
    worker = int(os.environ["HORA_ELASTIC_WORKER"])
    model, x, y = model_and_data(args.batch_size)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
        named_parameters=model.named_parameters(),
    )
    state = hvd.elastic.TorchState(model, optimizer, step=0)
    marks = {}
    state.register_reset_callbacks([lambda: marks.setdefault("reset", time.time())])

    @hvd.elastic.run
    def train(state):
        if "reset" in marks:
            marks.setdefault("synced", time.time())
        while state.step < STEPS:
            if state.step == KILL_STEP and worker == 1 and _core.elastic_generation() == 0:
                kill_self(args.out, worker)
            try:
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                if "synced" in marks:
                    marks.setdefault("stepped", time.time())
                state.step += 1
                state.commit()
            except hvd.HorovodInternalError:
                marks.setdefault("detected", time.time())
                raise

    train(state)
    if "stepped" in marks:
        record(args.out, f"hora-{worker}.json", {**marks, "rank": hvd.rank()})
    hvd.shutdown()


def hora_commit_worker(args):
    import torch
    import torch.nn.functional as F

    import hora.torch as hvd

    mark_pid(args.out)
    torch.set_num_threads(1)
    hvd.init()
    model, x, y = model_and_data(args.batch_size)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
        named_parameters=model.named_parameters(),
    )
    state = hvd.elastic.TorchState(model, optimizer, step=0)
    times = {"plain": [], "commit": [], "commit_only": []}

    def block(kind, steps):
        for _ in range(steps):
            t = time.perf_counter()
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            state.step += 1
            if kind == "commit":
                c = time.perf_counter()
                state.commit()
                times["commit_only"].append(time.perf_counter() - c)
            hvd.allreduce(torch.zeros(1), name="step.end")  # every rank ends the step together
            times[kind].append(time.perf_counter() - t)

    block("plain", 5)  # warm-up
    times["plain"].clear()
    for _ in range(args.repeats):
        block("plain", 10)
        block("commit", 10)
    if hvd.rank() == 0:
        print("COMMIT " + json.dumps({k: statistics.median(v) for k, v in times.items()}))
    hvd.shutdown()


def ddp_worker(args):
    started = time.time()
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    torch.set_num_threads(1)
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    rank = int(os.environ["RANK"])
    mark_pid(args.out)
    marks = {"started": started, "steps": []}
    record(args.out, f"ddp-{attempt}-{rank}.json", marks)
    if args.attempt_store:
        # The agent's store, with this attempt's keys under a prefix of their own.
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False
        )
        store = dist.PrefixStore(f"hora-bench/attempt{attempt}", store)
        dist.init_process_group(
            "gloo", store=store, rank=rank, world_size=int(os.environ["WORLD_SIZE"])
        )
    else:
        dist.init_process_group("gloo")
    marks["rendezvous"] = time.time()
    record(args.out, f"ddp-{attempt}-{rank}.json", marks)
    model, x, y = model_and_data(args.batch_size)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    marks["ddp"] = time.time()
    record(args.out, f"ddp-{attempt}-{rank}.json", marks)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    for step in range(STEPS):
        if step == KILL_STEP and rank == 1 and attempt == 0:
            kill_self(args.out, rank)
        optimizer.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        optimizer.step()
        marks["steps"].append(time.time())
        record(args.out, f"ddp-{attempt}-{rank}.json", marks)
    dist.destroy_process_group()


# ---- the driver ------------------------------------------------------------------------


def run(command, env, cap, out):
    """Runs ``command`` in its own session, killed as a whole after ``cap`` seconds; returns
    (seconds, exit code or None when capped, output)."""
    t = time.monotonic()
    proc = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=cap)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code = None
    # Workers a capped launcher left behind (in sessions of their own, holding the pipe).
    for path in glob.glob(os.path.join(out, "pid-*")):
        kill_if_ours(int(path.rsplit("-", 1)[1]), out)
    if code is None:
        output, _ = proc.communicate(timeout=30)
    with open(os.path.join(out, "output.log"), "w") as f:
        f.write(output)
    return time.monotonic() - t, code, output


def kill_if_ours(pid, out):
    """SIGKILLs ``pid`` if it is still a worker of this run (its command line names OUT)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if out.encode() not in f.read():
                return
        os.kill(pid, signal.SIGKILL)
    except (OSError, ProcessLookupError):
        pass


def fresh_dir(base, name):
    path = os.path.join(base, name)
    os.makedirs(path, exist_ok=True)
    for f in glob.glob(os.path.join(path, "*")):
        os.remove(f)
    return path


def env_for(args, extra=None):
    env = dict(os.environ, OMP_NUM_THREADS="1", HORA_TIMEOUT_S=str(args.timeout_s))
    env["PYTHONPATH"] = os.path.join(os.path.abspath(args.build), "python")
    env.update(extra or {})
    return env


def horarun(args):
    return os.path.join(os.path.abspath(args.build), "launcher", "horarun")


def measure_hora_recovery(args, base):
    out = fresh_dir(base, "hora")
    command = [horarun(args), "-np", "3", "--min-np", "2", "--max-np", "3"]
    command += ["--elastic-timeout", "60", sys.executable, HERE, "--role", "hora-recovery"]
    command += ["--out", out, "--batch-size", str(args.batch_size)]
    _, code, output = run(command, env_for(args), 180, out)
    kill = json.load(open(os.path.join(out, "kill.json")))["t"]
    survivors = [json.load(open(p)) for p in glob.glob(os.path.join(out, "hora-*.json"))]
    if code != 0 or len(survivors) != 2:
        raise RuntimeError(f"hora recovery run failed (exit {code}):\n{output[-3000:]}")
    # The slower survivor's view: the job trains again when both have stepped.
    last = max(survivors, key=lambda m: m["stepped"])
    return {
        "detection_s": last["detected"] - kill,
        "rerendezvous_s": last["reset"] - last["detected"],
        "sync_s": last["synced"] - last["reset"],
        "first_step_s": last["stepped"] - last["synced"],
        "total_s": last["stepped"] - kill,
    }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure_torchrun(args, base, name, rdzv, worker_flags=()):
    out = fresh_dir(base, "torchrun-" + "".join(c if c.isalnum() else "-" for c in name))
    # A later --nnodes in rdzv overrides this one (argparse keeps the last).
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    command = [torchrun, "--nnodes=1", "--nproc-per-node=3", "--max-restarts=1", *rdzv]
    command += [HERE, "--role", "ddp", "--out", out, "--batch-size", str(args.batch_size)]
    command += list(worker_flags)
    seconds, code, output = run(command, env_for(args), args.torchrun_cap, out)
    result = {"rdzv": " ".join(rdzv) or "(default)", "exit": code, "wall_s": seconds}
    result["worker_flags"] = " ".join(worker_flags)
    kill_file = os.path.join(out, "kill.json")
    restarted = [json.load(open(p)) for p in glob.glob(os.path.join(out, "ddp-1-*.json"))]
    if os.path.exists(kill_file) and len(restarted) == 3 and all(m["steps"] for m in restarted):
        kill = json.load(open(kill_file))["t"]
        result.update(
            restart_s=max(m["started"] for m in restarted) - kill,
            rendezvous_s=max(m["rendezvous"] for m in restarted)
            - max(m["started"] for m in restarted),
            first_step_s=max(m["steps"][0] for m in restarted)
            - max(m["rendezvous"] for m in restarted),
            total_s=max(m["steps"][0] for m in restarted) - kill,
        )
    else:
        # How far the restarted workers got: started, through init_process_group, through
        # DistributedDataParallel's construction, stepping.
        result["resumed"] = False
        result["restarted"] = {
            stage: sum(1 for m in restarted if m.get(stage))
            for stage in ("started", "rendezvous", "ddp", "steps")
        }
        # The last error a worker printed (the restarted attempt's, when it got to one).
        errors = [
            line
            for line in output.splitlines()
            if "Error" in line and "ChildFailedError" not in line and "traceback" not in line
        ]
        result["last_error"] = errors[-1][:300] if errors else None
        result["log"] = os.path.join(out, "output.log")
    return result


def measure_commit_cost(args, base):
    out = fresh_dir(base, "commit")
    command = [horarun(args), "-np", "3", "--min-np", "3", "--max-np", "3", sys.executable]
    command += [HERE, "--role", "hora-commit", "--out", out, "--repeats", str(args.repeats)]
    command += ["--batch-size", str(args.batch_size)]
    _, code, output = run(command, env_for(args), 300, out)
    for line in output.splitlines():
        if "COMMIT " in line:
            times = json.loads(line.split("COMMIT ", 1)[1])
            return {**times, "ratio": times["commit"] / times["plain"]}
    raise RuntimeError(f"commit-cost run failed (exit {code}):\n{output[-3000:]}")


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def measure_hora(args, base):
    runs = [measure_hora_recovery(args, base) for _ in range(args.repeats)]
    hora = {k: median_of(runs, k) for k in runs[0]}
    hora["total_range_s"] = [min(r["total_s"] for r in runs), max(r["total_s"] for r in runs)]
    return hora


def measure_torchruns(args, base):
    results = []
    for variant, rdzv, flags in (
        ("default", [], []),
        ("c10d", ["--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}"], []),
        ("standalone", ["--standalone"], []),
        (
            "c10d-elastic",
            ["--nnodes=1:3", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}"],
            [],
        ),
        ("default, store prefix per attempt", [], ["--attempt-store"]),
    ):
        results.append({"variant": variant, **measure_torchrun(args, base, variant, rdzv, flags)})
        print(f"torchrun {variant}: " + json.dumps(results[-1]), flush=True)
    return results


def driver(args):
    """Runs the parts asked for (--parts); with --json, the others' figures are kept from the
    file."""
    base = os.path.abspath(args.out or os.path.join(args.build, "elastic_recovery"))
    results = {}
    if args.json and os.path.exists(args.json):
        results = json.load(open(args.json))["results"]
    parts = {"hora": measure_hora, "torchrun": measure_torchruns, "commit": measure_commit_cost}
    for part in args.parts.split(","):
        results[part] = parts[part](args, base)
        print(f"{part}: " + json.dumps(results[part]), flush=True)
    results["timeout_s"] = args.timeout_s
    results["params"] = sum(a * b + b for a, b in itertools.pairwise(LAYERS))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "command": " ".join(sys.argv)}, f, indent=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=["driver", "hora-recovery", "hora-commit", "ddp"])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default="")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout-s", type=int, default=10)
    parser.add_argument("--torchrun-cap", type=float, default=120)
    parser.add_argument("--json", default="")
    parser.add_argument("--attempt-store", action="store_true")
    parser.add_argument("--parts", default="hora,torchrun,commit")
    args = parser.parse_args()
    roles = {
        "hora-recovery": hora_recovery_worker,
        "hora-commit": hora_commit_worker,
        "ddp": ddp_worker,
    }
    roles.get(args.role or "driver", driver)(args)


if __name__ == "__main__":
    main()
