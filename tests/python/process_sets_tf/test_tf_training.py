"""Training on process sets with hora.tensorflow and hora.keras: two groups of ranks train
different models at once (DistributedGradientTape, and model.fit with DistributedOptimizer
and the broadcast and metric callbacks), each equal to its own single-process run; state
broadcast within a set; SyncBatchNormalization's statistics over a set. Each test owns init
and shutdown."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import shard_batches

import hora.keras
import hora.tensorflow as hvd
from hora._internal.keras import keras

STEPS, PER_RANK = 3, 4


@pytest.fixture
def halves(job_size):
    """The even and the odd ranks, registered at init (None at one rank: no set but the
    global one fits); shutdown after the test. Yields (this rank's set, both sets)."""
    if job_size == 1:
        pytest.skip("one rank: only the global set exists")
    sets = [
        hvd.ProcessSet(list(range(0, job_size, 2))),
        hvd.ProcessSet(list(range(1, job_size, 2))),
    ]
    hvd.init(process_sets=sets)
    yield next(ps for ps in sets if ps.included()), sets
    hvd.shutdown()


def group_data(ps, features):
    """The group's global data (its own per set: the groups train different problems)."""
    rng = np.random.default_rng(10 + ps.process_set_id)
    k = len(ps.ranks)
    x = rng.normal(size=(STEPS * k * PER_RANK, features)).astype(np.float32)
    y = (x @ rng.normal(size=(features, 1)) + 0.1).astype(np.float32)
    return x, y


def make_model(ps, features):
    """A different model per group (its width), the same initial weights in the group."""
    keras.utils.set_random_seed(ps.process_set_id)
    return keras.Sequential(
        [keras.Input((features,)), keras.layers.Dense(2 + ps.process_set_id), keras.layers.Dense(1)]
    )


def tape_train(model, x, y, tape_wrapper):
    optimizer = keras.optimizers.SGD(0.1)
    batch = len(x) // STEPS
    for step in range(STEPS):
        xb, yb = x[step * batch : (step + 1) * batch], y[step * batch : (step + 1) * batch]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb) - yb))
        grads = tape_wrapper(tape).gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return [v.numpy() for v in model.trainable_variables]


def test_gradient_tape_per_set(halves):
    ps, _ = halves
    features = 3 + ps.process_set_id
    x, y = group_data(ps, features)
    k, position = len(ps.ranks), ps.rank()
    mine_x = shard_batches(x, k * PER_RANK, position, k)
    mine_y = shard_batches(y, k * PER_RANK, position, k)
    got = tape_train(
        make_model(ps, features),
        mine_x,
        mine_y,
        lambda tape: hvd.DistributedGradientTape(tape, process_set=ps),
    )
    want = tape_train(make_model(ps, features), x, y, lambda tape: tape)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, atol=1e-5)


def fit(model, x, y, batch, optimizer, callbacks):
    model.compile(optimizer=optimizer, loss="mse", jit_compile=False)
    history = model.fit(
        x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0, callbacks=callbacks
    )
    return [v.numpy() for v in model.trainable_variables], history.history["loss"]


def test_keras_fit_per_set(halves, tmp_path):
    ps, _ = halves
    features = 3 + ps.process_set_id
    x, y = group_data(ps, features)
    k, position, root = len(ps.ranks), ps.rank(), ps.ranks[0]
    model = make_model(ps, features)
    want, _ = fit(model, x, y, k * PER_RANK, keras.optimizers.SGD(0.1), [])
    model = make_model(ps, features)
    if hvd.rank() != root:  # the broadcast callback gives every member root's weights
        for v in model.trainable_variables:
            v.assign(v + 1.0)
    optimizer = hora.keras.DistributedOptimizer(keras.optimizers.SGD(0.1), process_set=ps)
    callbacks = [
        hora.keras.callbacks.BroadcastGlobalVariablesCallback(root, process_set=ps),
        hora.keras.callbacks.MetricAverageCallback(process_set=ps),
        hora.keras.callbacks.BestModelCheckpoint(
            monitor="loss", filepath=str(tmp_path / "best.keras"), process_set=ps
        ),
    ]
    mine_x = shard_batches(x, k * PER_RANK, position, k)
    mine_y = shard_batches(y, k * PER_RANK, position, k)
    got, losses = fit(model, mine_x, mine_y, PER_RANK, optimizer, callbacks)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, atol=1e-5)
    # The metric callback averaged the loss over the set: every member logs the same.
    logged = hvd.allgather_object(losses, process_set=ps)
    assert all(entry == logged[0] for entry in logged)
    # The set's first rank saved the best model (each rank has a directory of its own).
    assert os.path.exists(tmp_path / "best.keras") == (hvd.rank() == root)


def test_broadcast_state_on_sets(halves):
    ps, sets = halves
    root = ps.ranks[-1]
    v = tf.Variable([float(hvd.rank())] * 3)
    hvd.broadcast_variables([v], root_rank=root, process_set=ps)
    np.testing.assert_array_equal(v.numpy(), [root] * 3)
    got = hvd.broadcast_object({"from": hvd.rank()}, root_rank=root, process_set=ps)
    assert got == {"from": root}
    assert hvd.allgather_object(hvd.rank(), process_set=ps) == ps.ranks
    other = next(s for s in sets if s is not ps)
    with pytest.raises(hvd.InvalidArgumentError, match="not a member"):
        hvd.broadcast_variables([v], root_rank=other.ranks[0], process_set=other)


def test_sync_batch_norm_on_set(halves):
    ps, _ = halves
    k, position = len(ps.ranks), ps.rank()
    rng = np.random.default_rng(ps.process_set_id)
    x = rng.normal(size=(2 * k, 3)).astype(np.float32) * 3 + 1
    mine = x[2 * position : 2 * position + 2]
    layer = hvd.SyncBatchNormalization(process_set=ps)
    got = layer(tf.constant(mine), training=True).numpy()
    want = keras.layers.BatchNormalization()(tf.constant(x), training=True).numpy()
    np.testing.assert_allclose(got, want[2 * position : 2 * position + 2], atol=1e-4)
    np.testing.assert_allclose(
        layer.moving_mean.numpy(), 0.01 * x.mean(axis=0), rtol=1e-4, atol=1e-6
    )


def test_keras_exports():
    """hora.keras's names of Horovod's keras module: the job queries, Compressor, the timeline
    and the process sets, the same objects as hora.tensorflow's."""
    names = [
        "ProcessSet",
        "global_process_set",
        "add_process_set",
        "remove_process_set",
        "Compressor",
        "is_homogeneous",
        "mpi_enabled",
        "gloo_enabled",
        "mpi_built",
        "gloo_built",
        "nccl_built",
        "ddl_built",
        "ccl_built",
        "cuda_built",
        "rocm_built",
        "start_timeline",
        "stop_timeline",
    ]
    for name in names:
        assert name in hora.keras.__all__, name
        assert getattr(hora.keras, name) is getattr(hvd, name), name


def test_partial_tape_on_set(halves):
    """A local layer's gradient stays this rank's own, divided by the set's size."""
    ps, _ = halves
    layer = keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")
    x = tf.constant([[float(hvd.rank() + 1)]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x))
    tape = hvd.PartialDistributedGradientTape(tape, local_layers=layer, process_set=ps)
    (grad,) = tape.gradient(loss, layer.trainable_weights)
    np.testing.assert_allclose(grad.numpy(), [[(hvd.rank() + 1) / len(ps.ranks)]])


def test_global_set_at_any_size(job_size):
    """What applies at one rank too: the global set by name, the tape on it."""
    hvd.init()
    try:
        x = tf.Variable([1.0, 2.0])
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * x)
        tape = hvd.DistributedGradientTape(tape, process_set=hvd.global_process_set)
        np.testing.assert_allclose(tape.gradient(loss, [x])[0].numpy(), [2.0, 4.0])
        assert hvd.process_set_included_op(0).numpy() == 1
        assert hora.keras.global_process_set.ranks == list(range(job_size))
    finally:
        hvd.shutdown()
