"""Running a whole elastic job for the tests of this folder: horarun in elastic mode as a
subprocess (its own process group), the script's result files, and the check that nothing of
the job is left running afterwards."""

import glob
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")


def horarun():
    """The horarun next to the build's Python package (PYTHONPATH=<build>/python)."""
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        candidate = os.path.join(os.path.dirname(os.path.abspath(entry)), "launcher", "horarun")
        if entry and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("horarun not found beside PYTHONPATH's hora package (<build>/python)")


@dataclass
class Job:
    returncode: int
    output: str
    out: str
    results: dict = field(default_factory=dict)  # worker id -> its result
    started: dict = field(default_factory=dict)  # worker id -> [pids]


def processes_mentioning(text):
    """Pids of live processes whose command line contains ``text``."""
    pids = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and int(path.split("/")[2]) != os.getpid():
            pids.append(int(path.split("/")[2]))
    return pids


def run_job(out, horarun_args, script, script_args, timeout=90, env=None):
    """``horarun HORARUN_ARGS python SCRIPT --out OUT SCRIPT_ARGS``; returns the Job once
    horarun ended, after checking that no process of it (all carry OUT in their command line)
    is left."""
    command = [horarun(), *horarun_args, sys.executable, os.path.join(SCRIPTS, script)]
    command += ["--out", out, *script_args]
    job_env = dict(os.environ, HORA_TIMEOUT_S="5", OMP_NUM_THREADS="1", **(env or {}))
    job_env.pop("HORA_RANK", None)
    job_env.pop("HORA_SIZE", None)
    proc = subprocess.Popen(
        command,
        env=job_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise AssertionError(f"the job did not end within {timeout} s:\n{output}") from None
    deadline = time.monotonic() + 10
    while processes_mentioning(out) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = processes_mentioning(out)
    assert not left, f"processes of the job left after horarun ended: {left}\n{output}"
    job = Job(proc.returncode, output, out)
    for path in glob.glob(os.path.join(out, "worker*.json")):
        with open(path) as f:
            job.results[int(os.path.basename(path)[6:-5])] = json.load(f)
    for path in glob.glob(os.path.join(out, "started-*")):
        _, worker, pid = os.path.basename(path).split("-")
        job.started.setdefault(int(worker), []).append(int(pid))
    return job
