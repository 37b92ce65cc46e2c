"""hora.tensorflow.SyncBatchNormalization at N ranks equals one process's BatchNormalization
over the concatenated batch: outputs, input gradients, the summed gamma/beta gradients and
the moving statistics. Of the Keras generation tf.keras resolves to (this folder runs with
Keras 3 and with tf_keras)."""

import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import relative_error, run_in

from hora._internal.keras import LEGACY, keras

ROWS_PER_RANK = 5


def _layers(shape):
    rng = np.random.default_rng(3)
    channels = shape[-1]
    weights = [
        rng.uniform(0.5, 1.5, channels).astype(np.float32),  # gamma
        rng.normal(size=channels).astype(np.float32),  # beta
        np.zeros(channels, np.float32),  # moving mean
        np.ones(channels, np.float32),  # moving variance
    ]
    return weights


def _forward_backward(layer, x, c):
    x = tf.convert_to_tensor(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(y * c)
    dx, dgamma, dbeta = tape.gradient(loss, [x, layer.gamma, layer.beta])
    return y, dx, dgamma, dbeta


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("shape", [(4,), (3, 3, 2)], ids=["dense", "conv"])
def test_sync_batch_norm_equals_batch_norm_over_the_global_batch(hvd, mode, shape):
    r, n = hvd.rank(), hvd.size()
    rng = np.random.default_rng(11)
    x = (rng.normal(size=(ROWS_PER_RANK * n, *shape)) * 2 + 0.5).astype(np.float32)
    c = rng.normal(size=x.shape).astype(np.float32)
    mine = slice(r * ROWS_PER_RANK, (r + 1) * ROWS_PER_RANK)

    # tf_keras's fused kernel (4-D inputs) updates the moving variance with the unbiased
    # variance; SyncBatchNormalization is never fused, as Horovod's, so compare unfused.
    unfused = {"fused": False} if LEGACY else {}
    reference = keras.layers.BatchNormalization(momentum=0.5, **unfused)
    reference.build(x.shape)
    reference.set_weights(_layers(shape))
    want = run_in(mode, _forward_backward, reference, x, c)

    layer = hvd.SyncBatchNormalization(momentum=0.5)
    assert isinstance(layer, keras.layers.BatchNormalization)
    layer.build(x[mine].shape)
    layer.set_weights(_layers(shape))
    y, dx, dgamma, dbeta = run_in(mode, _forward_backward, layer, x[mine], c[mine])

    assert relative_error(y, want[0].numpy()[mine]) <= 1e-5
    assert relative_error(dx, want[1].numpy()[mine]) <= 1e-4
    for got, ref, what in ((dgamma, want[2], "gamma"), (dbeta, want[3], "beta")):
        summed = hvd.allreduce(got, op=hvd.Sum, name=f"sbn.{mode}.{shape}.{what}")
        assert relative_error(summed, ref) <= 1e-5, what
    for got, ref in zip(layer.get_weights()[2:], reference.get_weights()[2:], strict=True):
        assert relative_error(got, ref) <= 1e-5
    # Inference uses the moving statistics, as BatchNormalization does (no collective).
    np.testing.assert_allclose(
        layer(x[mine], training=False), reference(x[mine], training=False), rtol=1e-5, atol=1e-6
    )
