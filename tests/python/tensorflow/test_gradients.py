"""Gradients of hora.tensorflow's collectives, eagerly and inside tf.function, against the
closed form: the global loss is the sum of every rank's loss, each rank holding its own copy
of the collective's output."""

import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import run_in

MODES = ["eager", "graph"]


def grad_of(hvd, mode, collective, x):
    """d(loss)/dx with this rank's loss = (rank + 1) * sum(collective(x))."""
    weight = hvd.rank() + 1

    def fn(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            out = collective(t)
            loss = tf.reduce_sum(out * tf.cast(weight, out.dtype))
        return tape.gradient(loss, t)

    return run_in(mode, fn, x)


def weights(n):
    """Sum over ranks of (rank + 1): the upstream gradients summed over the job."""
    return n * (n + 1) / 2


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_grad(hvd, mode):
    n = hvd.size()
    x = tf.ones([2, 3])
    g = grad_of(hvd, mode, lambda t: hvd.allreduce(t, op=hvd.Sum, name="g.sum"), x)
    np.testing.assert_allclose(g.numpy(), np.full([2, 3], weights(n)))
    g = grad_of(hvd, mode, lambda t: hvd.allreduce(t, name="g.avg"), x)
    np.testing.assert_allclose(g.numpy(), np.full([2, 3], weights(n) / n), rtol=1e-6)
    g = grad_of(
        hvd,
        mode,
        lambda t: hvd.allreduce(
            t, op=hvd.Sum, prescale_factor=2.0, postscale_factor=3.0, name="g.scaled"
        ),
        x,
    )
    np.testing.assert_allclose(g.numpy(), np.full([2, 3], 6 * weights(n)), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_grad(hvd, mode):
    n = hvd.size()

    def fn(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            ra, rb = hvd.grouped_allreduce([a, b], op=hvd.Sum, name="g.group")
            loss = tf.reduce_sum(ra) * (hvd.rank() + 1) + 0 * tf.reduce_sum(rb)
        return tape.gradient(loss, [a, b])

    ga, gb = run_in(mode, fn, tf.ones([3]), tf.ones([2, 2]))
    np.testing.assert_allclose(ga.numpy(), np.full([3], weights(n)))
    np.testing.assert_allclose(gb.numpy(), np.zeros([2, 2]))


@pytest.mark.parametrize("mode", MODES)
def test_allgather_grad(hvd, mode):
    r, n = hvd.rank(), hvd.size()
    x = tf.ones([r + 1, 2])
    g = grad_of(hvd, mode, lambda t: hvd.allgather(t, name="g.ag"), x)
    np.testing.assert_allclose(g.numpy(), np.full([r + 1, 2], weights(n)))


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_grad(hvd, mode):
    n = hvd.size()
    root = n - 1
    g = grad_of(hvd, mode, lambda t: hvd.broadcast(t, root, name="g.bc"), tf.ones([4]))
    want = weights(n) if hvd.rank() == root else 0.0
    np.testing.assert_allclose(g.numpy(), np.full([4], want))


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_grad(hvd, mode):
    n = hvd.size()
    x = tf.ones([n, 2])  # one row to every rank
    g = grad_of(hvd, mode, lambda t: hvd.alltoall(t, name="g.a2a")[0], x)
    # The row sent to rank p comes back with rank p's weight p + 1.
    np.testing.assert_allclose(g.numpy(), np.repeat(np.arange(1, n + 1)[:, None], 2, 1))


@pytest.mark.parametrize("mode", MODES)
def test_reducescatter_grad(hvd, mode):
    n = hvd.size()
    x = tf.ones([n, 3])  # one row per rank
    g = grad_of(hvd, mode, lambda t: hvd.reducescatter(t, op=hvd.Sum, name="g.rs"), x)
    np.testing.assert_allclose(g.numpy(), np.repeat(np.arange(1, n + 1)[:, None], 3, 1))
    g = grad_of(hvd, mode, lambda t: hvd.reducescatter(t, name="g.rs.avg"), x)
    np.testing.assert_allclose(
        g.numpy(), np.repeat(np.arange(1, n + 1)[:, None], 3, 1) / n, rtol=1e-6
    )


def test_min_has_no_gradient(hvd):
    x = tf.ones([2])
    with pytest.raises(ValueError, match="no gradient"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = hvd.allreduce(x, op=hvd.Min, name="g.min")
        tape.gradient(y, x)
