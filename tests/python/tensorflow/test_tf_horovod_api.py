"""Horovod 0.28 API details of hora.tensorflow: eagerly, a collective whose name is still in
flight on this rank raises ValueError at the call, as Horovod's do (an eager op completes
before it returns, so the first collective of that name is started through the
framework-neutral API: one engine); the runtime queries are exported."""

import numpy as np
import pytest
import tensorflow as tf

import hora


def _x(hvd):
    return tf.ones([2 * hvd.size(), 3])


CALLS = {
    "allreduce": lambda hvd, n: hvd.allreduce(_x(hvd), name=n),
    "grouped_allreduce": lambda hvd, n: hvd.grouped_allreduce([_x(hvd)], name=n),
    "allgather": lambda hvd, n: hvd.allgather(_x(hvd), name=n),
    "broadcast": lambda hvd, n: hvd.broadcast(_x(hvd), 0, name=n),
    "alltoall": lambda hvd, n: hvd.alltoall(_x(hvd), name=n),
    "reducescatter": lambda hvd, n: hvd.reducescatter(_x(hvd), name=n),
}


@pytest.mark.parametrize("kind", sorted(CALLS))
def test_name_in_flight_raises_value_error_at_the_call(hvd, kind):
    if hvd.size() == 1:
        pytest.skip("needs a second rank to keep the first call in flight")
    name = f"tf.in_flight.{kind}"
    # The grouped call names its member name.0, as hora's grouped allreduce does.
    held = f"{name}.0" if kind == "grouped_allreduce" else name
    x = np.ones((2 * hvd.size(), 3), np.float32)
    handle = None
    if hvd.rank() == 0:
        handle = hora.allreduce_async(x, name=held)
        with pytest.raises(ValueError, match=f"tensor '{held}'.*still in flight"):
            CALLS[kind](hvd, name)
    hora.barrier()
    if hvd.rank() != 0:
        handle = hora.allreduce_async(x, name=held)
    hora.synchronize(handle)


def test_runtime_queries_are_exported(hvd):
    for name in ["is_homogeneous", "mpi_enabled", "gloo_enabled", "nccl_built", "mpi_built"]:
        assert getattr(hvd, name) is getattr(hora, name)
    for name in ["gloo_built", "cuda_built", "rocm_built", "ccl_built", "ddl_built"]:
        assert getattr(hvd, name) is getattr(hora, name)
    for name in ["start_timeline", "stop_timeline"]:
        assert getattr(hvd, name) is getattr(hora, name)
    assert hvd.is_homogeneous() is True


def _block(rank, size, rows):
    base, extra = divmod(rows, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf_function"])
@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_reducescatter_scale_factors_match_numpy(hvd, graph, op_name):
    op = getattr(hvd, op_name)
    size, rank = hvd.size(), hvd.rank()
    rows = 2 * size + 1
    mine = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) % 7 + rank

    def call(x):
        return hvd.reducescatter(
            x,
            op=op,
            name=f"tf.rs.scaled.{op_name}.{graph}",
            prescale_factor=0.5,
            postscale_factor=3.0,
        )

    fn = tf.function(call) if graph else call
    got = fn(tf.constant(mine)).numpy()
    total = sum(0.5 * (np.arange(rows * 3).reshape(rows, 3) % 7 + r) for r in range(size))
    if op_name == "Average":
        total = total / size
    start, stop = _block(rank, size, rows)
    np.testing.assert_allclose(got, (3.0 * total)[start:stop], rtol=1e-6)


def test_reducescatter_scale_factors_in_the_gradient(hvd):
    rows = 2 * hvd.size()
    x = tf.Variable(tf.ones([rows, 2]))
    with tf.GradientTape() as tape:
        out = hvd.reducescatter(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=3.0)
        loss = tf.reduce_sum(out)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), np.full((rows, 2), 6.0))


class ScaleCompressor(hora.Compressor):
    """Sends 2 * tensor and divides by the context (3) on arrival."""

    @staticmethod
    def compress(tensor):
        return tensor * 2, 3.0

    @staticmethod
    def decompress(tensor, ctx):
        return tensor / ctx


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf_function"])
def test_user_compressor_runs_around_allreduce(hvd, graph):
    size, rank = hvd.size(), hvd.rank()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + rank
    want = 2.0 / 3.0 * sum(np.arange(6, dtype=np.float32).reshape(2, 3) + r for r in range(size))

    def call(t):
        one = hvd.allreduce(t, op=hvd.Sum, compression=ScaleCompressor, name=f"tf.uc.{graph}")
        two = hvd.grouped_allreduce(
            [t, 2 * t], op=hvd.Sum, compression=ScaleCompressor, name=f"tf.uc.g.{graph}"
        )
        return one, two

    fn = tf.function(call) if graph else call
    one, two = fn(tf.constant(x))
    np.testing.assert_allclose(one.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(two[0].numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(two[1].numpy(), 2 * want, rtol=1e-6)


def test_builtin_compressors_cast_tf_tensors(hvd):
    x = tf.constant([1.5, -2.0])
    sent, ctx = hvd.Compression.fp16.compress(x)
    assert sent.dtype == tf.float16
    back = hvd.Compression.fp16.decompress(sent, ctx)
    assert back.dtype == tf.float32
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert issubclass(hvd.Compression.bf16, hvd.Compressor)
