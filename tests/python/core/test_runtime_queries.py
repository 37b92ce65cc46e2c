"""Horovod's runtime queries on hora: what is built and enabled, is_homogeneous, and the
timeline started and stopped at run time (rank 0 writes a valid Chrome trace of what ran in
between)."""

import json
import os

import numpy as np

import hora
import hora.torch


def test_built_answers_the_backends_hora_was_built_with(hora_job):
    built = hora._core.available_backends()
    assert hora.gloo_built() == ("gloo" in built)
    assert hora.mpi_built() == ("mpi" in built)
    assert hora.nccl_built() == ("nccl" in built)
    assert hora.cuda_built() == ("nccl" in built)
    assert (hora.rocm_built(), hora.ccl_built(), hora.ddl_built()) == (False, False, False)


def test_enabled_answers_the_running_backend(hora_job):
    assert hora.mpi_enabled() == (hora.backend() == "mpi")
    assert hora.gloo_enabled() == (hora.backend() == "gloo")


def test_every_api_exports_the_queries(hora_job):
    names = [
        "is_homogeneous",
        "mpi_enabled",
        "gloo_enabled",
        "nccl_built",
        "mpi_built",
        "gloo_built",
        "cuda_built",
        "rocm_built",
        "ccl_built",
        "ddl_built",
        "start_timeline",
        "stop_timeline",
    ]
    for name in names:
        assert getattr(hora.torch, name) is getattr(hora, name)


def test_is_homogeneous_on_one_host(hora_job):
    # horarun -np N puts every rank on this host.
    assert hora.is_homogeneous() is True


def test_timeline_between_start_and_stop_is_a_chrome_trace(hora_job, rank):
    # One path on every rank: rank 0's process id (the ranks share this machine).
    pid = hora.broadcast(np.array([os.getpid()], np.int64), 0, name="tl.py.pid")[0]
    path = f"/tmp/hora_tl_py_{int(pid)}.json"
    x = np.ones(16, np.float32)
    hora.allreduce(x, name="tl.py.before")
    hora.start_timeline(path, mark_cycles=True)
    hora.allreduce(x, name="tl.py.during")
    hora.allgather(x, name="tl.py.gather")
    hora.stop_timeline()
    hora.allreduce(x, name="tl.py.after")
    hora.stop_timeline()  # a no-op
    hora.barrier()
    if rank == 0:
        with open(path) as f:
            trace = json.load(f)
        os.remove(path)
        rows = {e["args"]["name"] for e in trace if e["ph"] == "M"}
        assert {"tl.py.during", "tl.py.gather"} <= rows
        assert not {"tl.py.before", "tl.py.after"} & rows
        phases = {e["name"] for e in trace}
        assert {"ALLREDUCE", "ALLGATHER", "CYCLE_START"} <= phases
        for e in trace:
            assert {"name", "ph", "pid", "tid"} <= set(e)
            if e["ph"] == "X":
                assert e["dur"] >= 0 and e["ts"] >= 0
    hora.barrier()
