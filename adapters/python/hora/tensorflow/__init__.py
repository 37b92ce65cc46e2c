"""Horovod's TensorFlow API (horovod.tensorflow) on hora, for TensorFlow 2 (tested on 2.21):
change ``import horovod.tensorflow as hvd`` to ``import hora.tensorflow as hvd``::

    import hora.tensorflow as hvd
    hvd.init()
    with tf.GradientTape() as tape:
        loss = loss_fn(model(x), y)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)      # averaged over ranks
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    if first_step:
        hvd.broadcast_variables(model.variables, root_rank=0)

The collectives are asynchronous custom TensorFlow ops (hora/tensorflow/mpi_ops.py says how
they work and where hora departs from Horovod); they run eagerly and inside tf.function.
For Keras (model.fit), see hora.keras.
"""

from __future__ import annotations

from hora._internal.api import *
from hora.tensorflow import elastic as elastic  # horovod.tensorflow.elastic
from hora.tensorflow.functions import *
from hora.tensorflow.gradient_tape import *
from hora.tensorflow.grouped_ops import *
from hora.tensorflow.helpers import *
from hora.tensorflow.mpi_ops import *
from hora.tensorflow.optimizer import *
from hora.tensorflow.rank_ops import *


def __getattr__(name: str) -> object:
    """SyncBatchNormalization, imported at first use: it is a Keras layer, and importing Keras
    (or failing to, where TF_USE_LEGACY_KERAS asks for a missing tf_keras) is left to the
    programs that use it, as TensorFlow leaves tf.keras."""
    if name == "SyncBatchNormalization":
        from hora.tensorflow.sync_batch_norm import SyncBatchNormalization

        return SyncBatchNormalization
    raise AttributeError(f"module 'hora.tensorflow' has no attribute {name!r}")
