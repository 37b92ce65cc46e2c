"""Horovod 0.28's hora.tensorflow names beyond the basic collectives: grouped_allgather and
grouped_reducescatter against NumPy, the rank ops, broadcast_global_variables in a
TensorFlow 1 graph, and PartialDistributedGradientTape's local gradients."""

import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import relative_error, run_in

from hora._internal.keras import keras

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

MODES = ["eager", "graph"]


def rank_rows(r, rows, cols, dtype=np.float32):
    """Rank r's tensor: rows x cols, element (i, j) = 100 r + 10 i + j."""
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return (100 * r + 10 * i + j).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("named", [True, False])
def test_grouped_allgather(hvd, mode, named):
    r, n = hvd.rank(), hvd.size()
    name = f"gag.{mode}" if named else None
    tensors = [tf.constant(rank_rows(r, r + 1, 3)), tf.constant(rank_rows(r, 2, 1, np.int32))]
    got = run_in(mode, lambda *ts: hvd.grouped_allgather(list(ts), name=name), *tensors)
    want = [
        np.concatenate([rank_rows(p, p + 1, 3) for p in range(n)]),
        np.concatenate([rank_rows(p, 2, 1, np.int32) for p in range(n)]),
    ]
    assert len(got) == 2
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    assert hvd.grouped_allgather([]) == []
    # Unnamed eager calls in a row, of other shapes each time (one traced function, its
    # members named by node; the calls match by order).
    for k in range(3):
        (got,) = hvd.grouped_allgather([tf.fill([k + r + 1], float(r))])
        want = np.concatenate([np.full(k + p + 1, float(p)) for p in range(n)])
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_grouped_reducescatter(hvd, mode, op):
    r, n = hvd.rank(), hvd.size()
    rows = [2 * n + 1, n]
    tensors = [tf.constant(rank_rows(r, rows[0], 2)), tf.constant(rank_rows(r, rows[1], 3))]
    got = run_in(
        mode,
        lambda *ts: hvd.grouped_reducescatter(list(ts), op=getattr(hvd, op), name=f"grs.{op}"),
        *tensors,
    )
    for g, count, cols in zip(got, rows, (2, 3), strict=True):
        total = sum(rank_rows(p, count, cols).astype(np.float64) for p in range(n))
        if op == "Average":
            total /= n
        # The first count % n ranks get one row more.
        sizes = [count // n + (1 if p < count % n else 0) for p in range(n)]
        begin = sum(sizes[:r])
        np.testing.assert_allclose(g.numpy(), total[begin : begin + sizes[r]], rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_rank_ops(hvd, mode):
    ops = {
        "size_op": hvd.size(),
        "rank_op": hvd.rank(),
        "local_size_op": hvd.local_size(),
        "local_rank_op": hvd.local_rank(),
        "cross_size_op": hvd.cross_size(),
        "cross_rank_op": hvd.cross_rank(),
    }
    for name, want in ops.items():
        got = run_in(mode, getattr(hvd, name))
        assert got.dtype == tf.int32 and got.shape == ()
        assert int(got) == want, name
    assert int(run_in(mode, hvd.process_set_included_op)) == 1
    # The sets' own: tests/python/process_sets_tf/.
    with pytest.raises(ValueError, match="no process set with id 1"):
        hvd.size_op(process_set_id=1)


def test_broadcast_global_variables(hvd):
    r = hvd.rank()
    with pytest.raises(RuntimeError, match="broadcast_variables"):
        hvd.broadcast_global_variables(0)
    root = hvd.size() - 1
    with tf.Graph().as_default():
        a = tf.compat.v1.Variable(np.full((2, 3), float(r), np.float32))
        b = tf.compat.v1.Variable(np.arange(4, dtype=np.int64) + 10 * r)
        sync = hvd.broadcast_global_variables(root)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(sync)
            got_a, got_b = session.run([a, b])
    np.testing.assert_array_equal(got_a, np.full((2, 3), float(root), np.float32))
    np.testing.assert_array_equal(got_b, np.arange(4) + 10 * root)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scale", [True, False])
def test_partial_tape_keeps_local_gradients(hvd, mode, scale):
    """Loss sum(w * x_r) + sum(v * x_r): w's gradient is averaged over the ranks, the local
    layer's v is this rank's own x_r (divided by size with scale_local_gradients)."""
    r, n = hvd.rank(), hvd.size()
    keras.utils.set_random_seed(1)
    shared = keras.layers.Dense(1, use_bias=False)
    local = keras.layers.Dense(1, use_bias=False)
    shared.build((None, 3))
    local.build((None, 3))
    x = np.arange(3, dtype=np.float32)[None, :] + r

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(shared(x)) + tf.reduce_sum(local(x))
        tape = hvd.PartialDistributedGradientTape(
            tape, local_layers=[local], scale_local_gradients=scale
        )
        return tape.gradient(loss, [shared.kernel, local.kernel])

    got_shared, got_local = run_in(mode, step, tf.constant(x))
    mean_x = np.mean([np.arange(3) + p for p in range(n)], axis=0)
    assert relative_error(got_shared.numpy().ravel(), mean_x) <= 1e-6
    want_local = x.ravel() / (n if scale else 1)
    assert relative_error(got_local.numpy().ravel(), want_local) <= 1e-6
    with pytest.raises(ValueError, match="not a Keras layer"):
        hvd.PartialDistributedGradientTape(tf.GradientTape(), local_layers=[object()])


def test_distributed_optimizer_of_a_tf1_optimizer(hvd):
    """minimize() of a tf.compat.v1.train.Optimizer applies the ranks' average gradient
    (loss sum(w * x_r): gradient x_r), a registered local variable its own divided by size."""
    r, n = hvd.rank(), hvd.size()
    x = np.arange(3, dtype=np.float32) + r
    with tf.Graph().as_default():
        w = tf.compat.v1.Variable(np.zeros(3, np.float32))
        v = tf.compat.v1.Variable(np.zeros(3, np.float32))
        loss = tf.reduce_sum(w * x) + tf.reduce_sum(v * x)
        opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.5))
        assert isinstance(opt, tf.compat.v1.train.Optimizer)
        opt.register_local_var(v)
        train = opt.minimize(loss)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(train)
            got_w, got_v = session.run([w, v])
    mean_x = np.mean([np.arange(3) + p for p in range(n)], axis=0)
    np.testing.assert_allclose(got_w, -0.5 * mean_x, rtol=1e-6)
    np.testing.assert_allclose(got_v, -0.5 * x / n, rtol=1e-6)
    with pytest.raises(hvd.UnimplementedError, match="backward_passes_per_step"):
        hvd.DistributedOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(0.5), backward_passes_per_step=2
        )


def test_distributed_optimizer_dispatches_keras_optimizers(hvd):
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), backward_passes_per_step=2)
    assert isinstance(opt, keras.optimizers.SGD)
    assert opt._hora.k == 2 and hasattr(opt, "register_local_var")
    with pytest.raises(ValueError, match="neither a Keras optimizer"):
        hvd.DistributedOptimizer(object())
    adasum = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), op=hvd.Adasum)
    assert adasum._hora.op == hvd.Adasum
    with pytest.raises(ValueError, match="Average, Sum or Adasum"):
        hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), op=hvd.Max)


def test_broadcast_in_place_and_object_fn(hvd):
    r, root = hvd.rank(), hvd.size() - 1
    variables = [tf.Variable(np.full(2, float(r))), tf.Variable(np.int32(r))]
    assert hvd.broadcast_(variables, root, name="bcast_") == variables
    np.testing.assert_array_equal(variables[0].numpy(), np.full(2, float(root)))
    assert int(variables[1].numpy()) == root
    assert hvd.broadcast_object_fn(root_rank=root, name="bofn")({"rank": r}) == {"rank": root}


def test_helpers_and_elastic(hvd):
    assert hvd.handle_average_backwards_compatibility(None, None) == hvd.Average
    assert hvd.handle_average_backwards_compatibility(None, False) == hvd.Sum
    with pytest.raises(ValueError):
        hvd.handle_average_backwards_compatibility(hvd.Sum, True)
    assert [hvd.check_num_rank_power_of_2(k) for k in (1, 2, 3, 4, 6, 8)] == [
        True,
        True,
        False,
        True,
        False,
        True,
    ]
    # horovod.tensorflow.elastic's names (tests/python/elastic_tf exercises them).
    for name in ("run", "State", "ObjectState", "TensorFlowState", "TensorFlowKerasState"):
        assert callable(getattr(hvd.elastic, name)), name
    assert hvd.elastic.HorovodInternalError is hvd.HorovodInternalError
