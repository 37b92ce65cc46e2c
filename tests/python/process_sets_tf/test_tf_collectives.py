"""hora.tensorflow's collectives on process sets: every collective and several dtypes on every
set shape that fits the job, eagerly and in a tf.function, against NumPy; their gradients;
grouped calls; the rank ops; a non-member's error. Each test owns init and shutdown."""

import numpy as np
import pytest
import tensorflow as tf
from helpers import shapes
from tf_helpers import run_in

import hora.tensorflow as hvd

DTYPES = [tf.float32, tf.float64, tf.int32, tf.int64, tf.float16]
MODES = ["eager", "function"]


@pytest.fixture
def sets(job_size):
    """The job's sets (shapes(n)), registered at init; shutdown after the test."""
    sets = [hvd.ProcessSet(ranks) for ranks in shapes(job_size)]
    hvd.init(process_sets=sets)
    yield sets
    hvd.shutdown()


def check_reductions(ps, mode):
    me, ranks = hvd.rank(), ps.ranks
    for dtype in DTYPES:
        x = tf.cast(tf.range(6) + me, dtype)
        got = run_in(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, process_set=ps), x)
        want = sum(np.arange(6, dtype=np.float64) + r for r in ranks)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want)
    avg = run_in(mode, lambda t: hvd.allreduce(t, process_set=ps), tf.fill([3], float(me)))
    np.testing.assert_allclose(avg.numpy(), np.mean(ranks), rtol=1e-6)
    grouped = run_in(
        mode,
        lambda a, b: hvd.grouped_allreduce([a, b], op=hvd.Max, process_set=ps),
        tf.constant([me], tf.int32),
        tf.constant([-me, me], tf.float64),
    )
    assert grouped[0].numpy().tolist() == [ranks[-1]]
    assert grouped[1].numpy().tolist() == [-ranks[0], ranks[-1]]
    k = len(ranks)
    block = run_in(
        mode,
        lambda t: hvd.reducescatter(t, op=hvd.Sum, process_set=ps),
        tf.ones([2 * k, 3], tf.float32),
    )
    np.testing.assert_array_equal(block.numpy(), np.full((2, 3), k, np.float32))
    blocks = run_in(
        mode,
        lambda t: hvd.grouped_reducescatter([t, t * 2], op=hvd.Sum, process_set=ps),
        tf.ones([k, 2], tf.float64),
    )
    np.testing.assert_array_equal(blocks[1].numpy(), np.full((1, 2), 2 * k))


def check_movers(ps, mode):
    me, ranks, position = hvd.rank(), ps.ranks, ps.rank()
    for dtype in (tf.float32, tf.int64, tf.float16):
        x = tf.cast(tf.fill([position + 1, 2], me), dtype)
        got = run_in(mode, lambda t: hvd.allgather(t, process_set=ps), x)
        want = np.concatenate([np.full((i + 1, 2), r) for i, r in enumerate(ranks)])
        np.testing.assert_array_equal(got.numpy(), want)
    pair = run_in(
        mode,
        lambda a: hvd.grouped_allgather([a, a * 10], process_set=ps),
        tf.constant([me], tf.int32),
    )
    assert pair[1].numpy().tolist() == [r * 10 for r in ranks]
    got = run_in(
        mode,
        lambda t: hvd.broadcast(t, ranks[-1], process_set=ps),
        tf.constant([me, me], tf.float64),
    )
    assert got.numpy().tolist() == [ranks[-1]] * 2
    sent = tf.constant([me * 100 + r for r in ranks], tf.int64)
    received, splits = run_in(mode, lambda t: hvd.alltoall(t, process_set=ps), sent)
    assert received.numpy().tolist() == [r * 100 + me for r in ranks]
    assert splits.numpy().tolist() == [1] * len(ranks)

    def barrier():
        hvd.barrier(process_set=ps)  # inside a tf.function an op, which must not be returned

    run_in(mode, barrier)


def check_outside(ps):
    match = rf"not a member of process set {ps.process_set_id}"
    with pytest.raises(hvd.InvalidArgumentError, match=match):
        hvd.allreduce(tf.ones([2]), process_set=ps)
    with pytest.raises(hvd.InvalidArgumentError, match="not a member"):
        hvd.barrier(process_set=ps)
    with pytest.raises(tf.errors.OpError, match=r"(?s)InvalidArgumentError.*not a member"):
        tf.function(lambda: hvd.allgather(tf.ones([1, 2]), process_set=ps))()


@pytest.mark.parametrize("mode", MODES)
def test_collectives_on_sets(sets, mode):
    for ps in sets:
        if ps.included():
            check_reductions(ps, mode)
            check_movers(ps, mode)
        else:
            check_outside(ps)
    # The global set, named or by default, after the others.
    total = hvd.allreduce(tf.ones([2]), op=hvd.Sum, process_set=hvd.global_process_set)
    np.testing.assert_allclose(total.numpy(), hvd.size())


def test_join_on_sets(sets):
    for ps in sets:
        if ps.included():
            assert hvd.join(process_set=ps) in ps.ranks


def test_rank_ops(sets):
    assert int(hvd.size_op()) == hvd.size()
    assert int(hvd.process_set_included_op(0)) == 1
    for ps in sets:
        assert int(hvd.size_op(ps.process_set_id)) == len(ps.ranks)
        set_no = ps.process_set_id
        included = int(run_in("function", lambda i=set_no: hvd.process_set_included_op(i)))
        assert included == int(hvd.rank() in ps.ranks)
    with pytest.raises(ValueError, match="no process set with id"):
        hvd.size_op(len(sets) + 1)


def gradient(mode, forward, x):
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
        return tape.gradient(y, x)

    return run_in(mode, step, x).numpy()


def check_gradients(ps, mode):
    """Each collective's gradient on set ``ps`` (this rank a member)."""
    me, ranks, k = hvd.rank(), ps.ranks, len(ps.ranks)
    x = tf.constant([1.0, 2.0]) * (me + 1)
    # d/dx of sum over members of sum(allreduce(x)): every member's ones, summed/averaged.
    g = gradient(mode, lambda t: tf.reduce_sum(hvd.allreduce(t, op=hvd.Sum, process_set=ps)), x)
    np.testing.assert_allclose(g, [k, k])
    g = gradient(mode, lambda t: tf.reduce_sum(hvd.allreduce(t, process_set=ps)), x)
    np.testing.assert_allclose(g, [1.0, 1.0], rtol=1e-6)
    rows = tf.ones([ps.rank() + 1, 2])
    weights = tf.constant(np.arange(k * (k + 1) // 2 * 2, dtype=np.float32).reshape(-1, 2))
    g = gradient(mode, lambda t: tf.reduce_sum(hvd.allgather(t, process_set=ps) * weights), rows)
    begin = ps.rank() * (ps.rank() + 1) // 2
    np.testing.assert_allclose(g, k * weights.numpy()[begin : begin + ps.rank() + 1])
    g = gradient(mode, lambda t: tf.reduce_sum(hvd.broadcast(t, ranks[0], process_set=ps)), x)
    np.testing.assert_allclose(g, [k, k] if me == ranks[0] else [0, 0])
    block = tf.ones([k, 2])
    g = gradient(
        mode,
        lambda t: tf.reduce_sum(hvd.reducescatter(t, op=hvd.Average, process_set=ps)),
        block,
    )
    # Every member's block is the mean of k rows: each row weighs 1/k.
    np.testing.assert_allclose(g, np.full((k, 2), 1.0 / k), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_gradients_on_sets(sets, mode):
    for ps in sets:
        if ps.included():
            check_gradients(ps, mode)


def test_dynamic_sets(job_size):
    """Sets added and removed after init: their collectives, then the removed set's
    ValueError."""
    hvd.init(process_sets="dynamic")
    try:
        for ranks in shapes(job_size):
            ps = hvd.add_process_set(ranks)
            if ps.included():
                check_reductions(ps, "function")
            else:
                check_outside(ps)
            assert hvd.remove_process_set(ps)
            with pytest.raises(ValueError, match="not registered"):
                hvd.allreduce(tf.ones([1]), process_set=ps)
        total = hvd.allreduce(tf.ones([2]), op=hvd.Sum)
        np.testing.assert_allclose(total.numpy(), job_size)
    finally:
        hvd.shutdown()


def test_unregistered_set_raises(sets):
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(tf.ones([1]), process_set=hvd.ProcessSet([0]))
