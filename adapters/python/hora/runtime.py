"""hora's runtime: init and shutdown, the job's layout, what is built."""

from __future__ import annotations

import atexit
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hora import _core
from hora.process_sets import ProcessSet, after_init
from hora.process_sets import init_arguments as process_set_args


def init(
    settings: Mapping[str, object] | None = None,
    process_sets: Sequence[ProcessSet] | str | None = None,
) -> None:
    """Starts hora: reads HORA_* (and horarun's, mpirun's, Slurm's or torchrun's variables),
    connects every rank (at most HORA_START_TIMEOUT_S) and starts the engine.

    ``settings``: a dict of HORA_* names to values, taking precedence over the environment,
    validated like it (an unknown name is an error). ``process_sets``: Horovod's argument, the
    ProcessSets to register (the same on every rank; ids 1, 2, ... in order), or "dynamic" to
    allow add_process_set / remove_process_set later. Calling init again is a no-op."""
    pairs = [(str(k), str(v)) for k, v in (settings or {}).items()]
    static, dynamic = process_set_args(process_sets)
    _core.init(pairs, static, dynamic)
    after_init(process_sets)


def shutdown() -> None:
    """Stops the engine (collectives still pending fail) and releases everything init made."""
    _core.shutdown()


def _shutdown_at_exit() -> None:
    if _core.is_initialized():
        try:
            _core.shutdown()
        except Exception:  # the process is ending: the error was reported to the handles
            pass


atexit.register(_shutdown_at_exit)

# The binding's functions themselves (no Python call in between): whether init ran, this
# process's rank and the job's size, the same on this host and across hosts (cross_rank: the
# host's index), and the engine's counters (rounds, cache_hits, buckets, errors, ...).
is_initialized: Callable[[], bool] = _core.is_initialized
rank: Callable[[], int] = _core.rank
size: Callable[[], int] = _core.size
local_rank: Callable[[], int] = _core.local_rank
local_size: Callable[[], int] = _core.local_size
cross_rank: Callable[[], int] = _core.cross_rank
cross_size: Callable[[], int] = _core.cross_size
engine_stats: Callable[[], dict[str, int]] = _core.engine_stats
autotune_state: Callable[[], dict[str, Any]] = _core.autotune_state


def gloo_built() -> bool:
    """True when hora was built with the Gloo backend."""
    return "gloo" in _core.available_backends()


def mpi_built() -> bool:
    """True when hora was built with the MPI backend."""
    return "mpi" in _core.available_backends()


def nccl_built() -> bool:
    """True when hora was built with the NCCL backend."""
    return "nccl" in _core.available_backends()


def cuda_built() -> bool:
    """True when hora was built for CUDA tensors (its CUDA kernels come with the NCCL
    backend, so this is nccl_built())."""
    return nccl_built()


def rocm_built() -> bool:
    """False: hora has no ROCm build."""
    return False


def ccl_built() -> bool:
    """False: hora has no oneCCL backend."""
    return False


def ddl_built() -> bool:
    """False: hora has no IBM DDL backend."""
    return False


def _running_backend() -> str | None:
    return _core.backend() if _core.is_initialized() else None


def mpi_enabled() -> bool:
    """True when the running job moves its bytes over MPI (the mpi backend); False before
    init."""
    return _running_backend() == "mpi"


def gloo_enabled() -> bool:
    """True when the running job moves its bytes over Gloo (the gloo backend); False before
    init."""
    return _running_backend() == "gloo"


def is_homogeneous() -> bool:
    """True when every host of the job runs the same number of ranks (the same on every
    rank). Raises FailedPreconditionError before init."""
    return _core.is_homogeneous()


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """From now on rank 0 writes a Chrome trace (chrome://tracing, Perfetto) of the engine's
    work to ``file_path``, as HORA_TIMELINE does from init (replacing a timeline being
    written); ``mark_cycles`` adds a CYCLE_START mark at each engine round. Other ranks
    accept the call and write nothing. Not collective."""
    _core.start_timeline(str(file_path), bool(mark_cycles))


def stop_timeline() -> None:
    """Writes what is left and closes the timeline (a complete JSON array); a no-op when none
    is open."""
    _core.stop_timeline()


def backend() -> str:
    """The backend of the running job: builtin, gloo, mpi or nccl."""
    return _core.backend()


def mpi_threads_supported() -> bool:
    """Horovod's question whether MPI runs with threads: hora's engine thread alone drives MPI,
    so this is True exactly when the job runs on the MPI backend."""
    return backend() == "mpi"
