"""hora: data-parallel training in a few lines, on any framework.

The framework-neutral API (NumPy arrays or any DLPack tensor); hora.torch, hora.tensorflow
and hora.keras build Horovod's APIs on it::

    import hora
    hora.init()
    avg = hora.allreduce(np.ones(4, np.float32), name="x")   # the average over ranks
    hora.shutdown()
"""

from __future__ import annotations

from hora import _core
from hora.compression import Compression
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
from hora.ops import (
    Adasum,
    Average,
    Handle,
    Max,
    Min,
    Product,
    Sum,
    allgather,
    allgather_async,
    allreduce,
    allreduce_,
    allreduce_async,
    allreduce_async_,
    alltoall,
    alltoall_async,
    barrier,
    broadcast,
    broadcast_,
    broadcast_async,
    broadcast_async_,
    grouped_allreduce,
    grouped_allreduce_,
    grouped_allreduce_async,
    grouped_allreduce_async_,
    join,
    poll,
    reducescatter,
    reducescatter_async,
    synchronize,
)
from hora.runtime import (
    backend,
    cross_rank,
    cross_size,
    engine_stats,
    gloo_built,
    init,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_threads_supported,
    nccl_built,
    rank,
    shutdown,
    size,
)

GradientReducer = _core.GradientReducer
