"""hora.tensorflow with op=Adasum: allreduce and DistributedGradientTape (eagerly and inside
tf.function) against a NumPy reference of the Adasum tree over every rank's gradients, the
same on every rank; the Keras DistributedOptimizer accepts it; integer tensors are refused."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from adasum_reference import adasum_tree
from tf_helpers import all_ranks_agree


def local(rank, n):
    return np.random.default_rng(rank).standard_normal(n)


def test_allreduce(hvd):
    out = hvd.allreduce(tf.constant(local(hvd.rank(), 99)), op=hvd.Adasum, name="tf.adasum")
    want = adasum_tree([local(r, 99) for r in range(hvd.size())])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    all_ranks_agree(hvd, out.numpy(), "tf.adasum")
    with pytest.raises(Exception, match="adasum is not defined for int32"):
        hvd.allreduce(tf.constant([1, 2], tf.int32), op=hvd.Adasum, name="tf.adasum.int")


def model_and_batch(rank):
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2)])
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(5, 4)).astype(np.float64)
    y = rng.normal(size=(5, 2)).astype(np.float64)
    return model, x, y


def grads(model, x, y, wrap=None):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    if wrap is not None:
        tape = wrap(tape)
    return tape.gradient(loss, model.trainable_variables)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_gradient_tape(hvd, mode):
    model, x, y = model_and_batch(hvd.rank())
    wrap = lambda tape: hvd.DistributedGradientTape(tape, op=hvd.Adasum)  # noqa: E731
    run = (
        (lambda: grads(model, x, y, wrap))
        if mode == "eager"
        else tf.function(lambda: grads(model, x, y, wrap))
    )
    got = [g.numpy() for g in run()]
    per_rank = []
    for r in range(hvd.size()):
        m, xr, yr = model_and_batch(r)
        per_rank.append([g.numpy().astype(np.float64) for g in grads(m, xr, yr)])
    for i, g in enumerate(got):
        want = adasum_tree([p[i].ravel() for p in per_rank]).reshape(g.shape)
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6)
        all_ranks_agree(hvd, g, f"tape.{mode}.{i}")


def test_keras_optimizer_accepts_adasum(hvd):
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), op=hvd.Adasum)
    model, x, y = model_and_batch(hvd.rank())
    model.compile(optimizer=opt, loss="mse")
    model.fit(x, y, batch_size=5, epochs=1, verbose=0)
    for i, w in enumerate(model.get_weights()):
        all_ranks_agree(hvd, w, f"keras.adasum.{i}")
