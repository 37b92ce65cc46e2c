"""hora's runtime: init and shutdown, the job's layout, what is built."""

from __future__ import annotations

import atexit

from hora import _core


def init(settings=None):
    """Starts hora: reads HORA_* (and horarun's, mpirun's, Slurm's or torchrun's variables),
    connects every rank (at most HORA_START_TIMEOUT_S) and starts the engine.

    ``settings``: a dict of HORA_* names to values, taking precedence over the environment,
    validated like it (an unknown name is an error). Calling init again is a no-op."""
    pairs = [(str(k), str(v)) for k, v in (settings or {}).items()]
    _core.init(pairs)


def shutdown():
    """Stops the engine (collectives still pending fail) and releases everything init made."""
    _core.shutdown()


def _shutdown_at_exit():
    if _core.is_initialized():
        try:
            _core.shutdown()
        except Exception:  # the process is ending: the error was reported to the handles
            pass


atexit.register(_shutdown_at_exit)

is_initialized = _core.is_initialized
rank = _core.rank
size = _core.size
local_rank = _core.local_rank
local_size = _core.local_size
cross_rank = _core.cross_rank
cross_size = _core.cross_size
engine_stats = _core.engine_stats


def gloo_built():
    """True when hora was built with the Gloo backend."""
    return "gloo" in _core.available_backends()


def mpi_built():
    """True when hora was built with the MPI backend."""
    return "mpi" in _core.available_backends()


def nccl_built():
    """True when hora was built with the NCCL backend."""
    return "nccl" in _core.available_backends()


def backend():
    """The backend of the running job: builtin, gloo, mpi or nccl."""
    return _core.backend()


def mpi_threads_supported():
    """Horovod's question whether MPI runs with threads: hora's engine thread alone drives MPI,
    so this is True exactly when the job runs on the MPI backend."""
    return backend() == "mpi"
