"""Horovod's Keras API (horovod.keras / horovod.tensorflow.keras) on hora, for Keras 3 with
the TensorFlow backend (tested on Keras 3.15, TensorFlow 2.21)::

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

import keras as _keras

if not _keras.__version__.startswith("3."):  # pragma: no cover - depends on the environment
    raise ImportError(f"hora.keras needs Keras 3, found {_keras.__version__}")
if _keras.backend.backend() != "tensorflow":  # pragma: no cover
    raise ImportError(
        f"hora.keras needs Keras's TensorFlow backend, found "
        f"{_keras.backend.backend()} (KERAS_BACKEND=tensorflow)"
    )

from hora.keras import callbacks
from hora.keras.optimizer import DistributedOptimizer, load_model
from hora.tensorflow import (
    Average,
    Compression,
    HoraError,
    Sum,
    allgather,
    allreduce,
    barrier,
    broadcast,
    broadcast_object,
    broadcast_variables,
    cross_rank,
    cross_size,
    init,
    is_initialized,
    join,
    local_rank,
    local_size,
    rank,
    shutdown,
    size,
)

__all__ = [
    "Average",
    "Compression",
    "DistributedOptimizer",
    "HoraError",
    "Sum",
    "allgather",
    "allreduce",
    "barrier",
    "broadcast",
    "broadcast_object",
    "broadcast_variables",
    "callbacks",
    "cross_rank",
    "cross_size",
    "init",
    "is_initialized",
    "join",
    "load_model",
    "local_rank",
    "local_size",
    "rank",
    "shutdown",
    "size",
]
