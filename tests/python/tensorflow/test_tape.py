"""DistributedGradientTape in a custom training loop: the gradients of N ranks at b rows each
equal one process's at N * b rows, eagerly and inside tf.function, dense and sparse."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import all_ranks_agree, relative_error, shard_batches

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

GLOBAL_BATCH = 12
MODES = ["eager", "graph"]


def model_and_data():
    keras.utils.set_random_seed(5)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(5, activation="relu"), keras.layers.Dense(2)]
    )
    rng = np.random.default_rng(9)
    x = rng.normal(size=(GLOBAL_BATCH, 4)).astype(np.float32)
    y = rng.normal(size=(GLOBAL_BATCH, 2)).astype(np.float32)
    return model, x, y


def gradients(model, x, y, wrap=None):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    if wrap is not None:
        tape = wrap(tape)
    return tape.gradient(loss, model.trainable_variables)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "options",
    [{}, {"num_groups": 2}, {"gradient_predivide_factor": 2.0}, {"compression_": "fp16"}],
    ids=str,
)
def test_tape_averages_like_one_process(hvd, mode, options):
    r, n = hvd.rank(), hvd.size()
    model, x, y = model_and_data()
    want = gradients(model, x, y)
    options = dict(options)
    if "compression_" in options:
        options["compression"] = getattr(hvd.Compression, options.pop("compression_"))
    xs, ys = shard_batches(x, GLOBAL_BATCH, r, n), shard_batches(y, GLOBAL_BATCH, r, n)

    def step(a, b):
        return gradients(model, a, b, lambda t: hvd.DistributedGradientTape(t, **options))

    got = step(xs, ys) if mode == "eager" else tf.function(step)(xs, ys)
    tolerance = 1e-2 if "compression" in options else 1e-5
    for g, w in zip(got, want, strict=True):
        assert relative_error(g.numpy(), w.numpy()) <= tolerance
    all_ranks_agree(hvd, np.concatenate([g.numpy().ravel() for g in got]), f"tape.{mode}")


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_tape_sparse_gradients(hvd, sparse_as_dense):
    r, n = hvd.rank(), hvd.size()
    table = tf.Variable(np.arange(20, dtype=np.float32).reshape(10, 2))
    ids = np.array([(3 * k) % 10 for k in range(GLOBAL_BATCH)])

    def grad(rows, wrap=None):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.reduce_sum(tf.gather(table, rows) ** 2, axis=1))
        if wrap is not None:
            tape = wrap(tape)
        return tape.gradient(loss, [table])[0]

    want = tf.convert_to_tensor(grad(ids)).numpy()
    got = grad(
        shard_batches(ids, GLOBAL_BATCH, r, n),
        lambda t: hvd.DistributedGradientTape(t, sparse_as_dense=sparse_as_dense),
    )
    assert isinstance(got, tf.IndexedSlices) != sparse_as_dense
    assert relative_error(tf.convert_to_tensor(got).numpy(), want) <= 1e-6


def test_custom_training_loop(hvd):
    """A few steps of a tf.function training loop keep every rank's weights identical and
    equal to one process at the global batch."""
    r, n = hvd.rank(), hvd.size()
    model, x, y = model_and_data()
    reference, _, _ = model_and_data()
    opt, ref_opt = keras.optimizers.SGD(0.05), keras.optimizers.SGD(0.05)
    xs, ys = shard_batches(x, GLOBAL_BATCH, r, n), shard_batches(y, GLOBAL_BATCH, r, n)

    @tf.function
    def step(a, b):
        grads = gradients(model, a, b, hvd.DistributedGradientTape)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))

    @tf.function
    def ref_step(a, b):
        grads = gradients(reference, a, b)
        ref_opt.apply_gradients(zip(grads, reference.trainable_variables, strict=True))

    hvd.broadcast_variables(model.variables, root_rank=0)
    for _ in range(3):
        step(xs, ys)
        ref_step(x, y)
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        assert relative_error(got, want) <= 1e-5
    all_ranks_agree(hvd, np.concatenate([w.ravel() for w in model.get_weights()]), "loop")
