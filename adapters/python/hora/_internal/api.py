"""The names every hora API exports alike: hora, hora.torch and hora.tensorflow each take them
with ``from hora._internal.api import *`` (hora.keras picks its own from hora.tensorflow).

They are the same objects everywhere: the runtime (init, shutdown, rank, size, ...), the
errors, Compression and Compressor, and the reduce ops. A name added here, to the imports
and to __all__ (a literal list, which type checkers read), is exported by every API.
"""

from __future__ import annotations

from hora._internal.reduce_ops import Adasum, Average, Max, Min, Product, Sum
from hora.compression import Compression, Compressor
from hora.errors import (
    FailedPreconditionError,
    HoraError,
    HoraIOError,
    HoraTimeoutError,
    HorovodInternalError,
    InternalError,
    InvalidArgumentError,
    MismatchError,
    RemoteError,
    UnimplementedError,
)
from hora.process_sets import (
    ProcessSet,
    add_process_set,
    global_process_set,
    remove_process_set,
)
from hora.runtime import (
    autotune_state,
    backend,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    engine_stats,
    gloo_built,
    gloo_enabled,
    init,
    is_homogeneous,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    rank,
    rocm_built,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
)

__all__ = [
    "Adasum",
    "Average",
    "Compression",
    "Compressor",
    "FailedPreconditionError",
    "HoraError",
    "HoraIOError",
    "HoraTimeoutError",
    "HorovodInternalError",
    "InternalError",
    "InvalidArgumentError",
    "Max",
    "Min",
    "MismatchError",
    "ProcessSet",
    "Product",
    "RemoteError",
    "Sum",
    "UnimplementedError",
    "add_process_set",
    "autotune_state",
    "backend",
    "ccl_built",
    "cross_rank",
    "cross_size",
    "cuda_built",
    "ddl_built",
    "engine_stats",
    "global_process_set",
    "gloo_built",
    "gloo_enabled",
    "init",
    "is_homogeneous",
    "is_initialized",
    "local_rank",
    "local_size",
    "mpi_built",
    "mpi_enabled",
    "mpi_threads_supported",
    "nccl_built",
    "rank",
    "remove_process_set",
    "rocm_built",
    "shutdown",
    "size",
    "start_timeline",
    "stop_timeline",
]
