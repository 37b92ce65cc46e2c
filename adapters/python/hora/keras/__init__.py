"""Horovod's Keras API (horovod.keras / horovod.tensorflow.keras) on hora, for the Keras that
tf.keras resolves to: Keras 3 with the TensorFlow backend (tested on Keras 3.15), or tf_keras
(Keras 2, tested on 2.21) when TF_USE_LEGACY_KERAS=1 (hora/_internal/keras.py)::

    import hora.keras as hvd
    hvd.init()
    opt = keras.optimizers.Adam(0.001 * hvd.size())
    model.compile(optimizer=hvd.DistributedOptimizer(opt), loss=...)
    model.fit(x, y, batch_size=per_rank_batch, callbacks=[
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.callbacks.MetricAverageCallback(),
    ], verbose=1 if hvd.rank() == 0 else 0)

Each rank feeds its own shard of the data; DistributedOptimizer averages the gradients in
the compiled train step, so every rank applies the same update.
"""

from __future__ import annotations

from hora._internal.keras import keras as _keras  # noqa: F401 - checks the Keras generation
from hora.keras import callbacks, elastic
from hora.keras.collectives import allgather, allreduce, broadcast, reducescatter
from hora.keras.optimizer import DistributedOptimizer, PartialDistributedOptimizer, load_model
from hora.tensorflow import (
    Adasum,
    Average,
    Compression,
    Compressor,
    HoraError,
    Max,
    Min,
    ProcessSet,
    Product,
    Sum,
    SyncBatchNormalization,
    add_process_set,
    allgather_object,
    barrier,
    broadcast_global_variables,
    broadcast_object,
    broadcast_variables,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    global_process_set,
    gloo_built,
    gloo_enabled,
    grouped_allgather,
    grouped_allreduce,
    grouped_reducescatter,
    init,
    is_homogeneous,
    is_initialized,
    join,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    rank,
    remove_process_set,
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
    "DistributedOptimizer",
    "HoraError",
    "Max",
    "Min",
    "PartialDistributedOptimizer",
    "ProcessSet",
    "Product",
    "Sum",
    "SyncBatchNormalization",
    "add_process_set",
    "allgather",
    "allgather_object",
    "allreduce",
    "barrier",
    "broadcast",
    "broadcast_global_variables",
    "broadcast_object",
    "broadcast_variables",
    "callbacks",
    "ccl_built",
    "cross_rank",
    "cross_size",
    "cuda_built",
    "ddl_built",
    "elastic",
    "global_process_set",
    "gloo_built",
    "gloo_enabled",
    "grouped_allgather",
    "grouped_allreduce",
    "grouped_reducescatter",
    "init",
    "is_homogeneous",
    "is_initialized",
    "join",
    "load_model",
    "local_rank",
    "local_size",
    "mpi_built",
    "mpi_enabled",
    "mpi_threads_supported",
    "nccl_built",
    "rank",
    "reducescatter",
    "remove_process_set",
    "rocm_built",
    "shutdown",
    "size",
    "start_timeline",
    "stop_timeline",
]
