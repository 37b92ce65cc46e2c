"""Every hora.tensorflow collective, eagerly and inside tf.function, on the dtypes TensorFlow
and hora share, against a closed-form result checked on every rank."""

import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import all_ranks_agree, run_in

import hora

MODES = ["eager", "graph"]
FLOATS = [tf.float16, tf.bfloat16, tf.float32, tf.float64]
INTS = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64]
DTYPES = INTS + FLOATS + [tf.bool]


def value(dtype, rank, shape, salt=0):
    """input[i] = f(rank, i): small values, so sums and products are exact in every dtype."""
    n = int(np.prod(shape))
    i = np.arange(n)
    if dtype == tf.bool:
        v = ((i + rank + salt) % 3) != 0
    elif dtype in (tf.uint8, tf.uint16):
        v = (i + rank + salt) % 3 + 1
    elif dtype.is_floating:
        v = ((i * 7 + rank * 3 + salt) % 5) - 1.0
    else:
        v = (i * 5 + rank + salt) % 5 - 2
    return tf.cast(tf.constant(v.reshape(shape)), dtype)


def as_float(t):
    return tf.cast(t, tf.float64).numpy() if t.dtype != tf.bool else t.numpy()


def ops_for(dtype):
    if dtype == tf.bool:
        return [("min", hora.Min), ("max", hora.Max)]
    ops = [("sum", hora.Sum), ("min", hora.Min), ("max", hora.Max), ("product", hora.Product)]
    if dtype.is_floating:
        ops.append(("average", hora.Average))
    return ops


def reference(dtype, op, size, shape):
    vals = np.stack([as_float(value(dtype, r, shape)) for r in range(size)])
    if dtype == tf.bool:
        return vals.all(0) if op == "min" else vals.any(0)
    return {
        "sum": vals.sum(0),
        "average": vals.sum(0) / size,
        "min": vals.min(0),
        "max": vals.max(0),
        "product": vals.prod(0),
    }[op]


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_every_dtype_and_op(hvd, mode):
    shape = [3, 5]
    inputs = [value(dtype, hvd.rank(), shape) for dtype in DTYPES]

    def every_dtype_and_op(*ts):  # one trace for the whole matrix
        return [
            [
                hvd.allreduce(t, op=op, name=f"ar.{t.dtype.name}.{op_name}")
                for op_name, op in ops_for(t.dtype)
            ]
            for t in ts
        ]

    results = run_in(mode, every_dtype_and_op, *inputs)
    for dtype, per_op in zip(DTYPES, results, strict=True):
        tol = {tf.float16: 1e-3, tf.bfloat16: 1e-2, tf.float32: 1e-6, tf.float64: 1e-12}.get(
            dtype, 0
        )
        for (op_name, _), got in zip(ops_for(dtype), per_op, strict=True):
            assert got.dtype == dtype and got.shape == shape
            want = reference(dtype, op_name, hvd.size(), shape)
            np.testing.assert_allclose(
                as_float(got), want, rtol=tol, atol=tol, err_msg=f"{dtype.name} {op_name}"
            )
    flat = [np.asarray(as_float(g), np.float64).ravel() for per_op in results for g in per_op]
    all_ranks_agree(hvd, np.concatenate(flat), f"ar.{mode}")


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_scales_and_default_names(hvd, mode):
    x = tf.fill([7], float(hvd.rank() + 1))
    total = sum(range(1, hvd.size() + 1))

    def fn(t):  # unnamed: node names in a graph, call order eagerly
        return (
            hvd.allreduce(t, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5),
            hvd.allreduce(t),
            hvd.allreduce(t, average=False),
        )

    scaled, avg, summed = run_in(mode, fn, x)
    np.testing.assert_allclose(scaled.numpy(), total)
    np.testing.assert_allclose(avg.numpy(), total / hvd.size())
    np.testing.assert_allclose(summed.numpy(), total)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("compression", ["fp16", "bf16"])
def test_allreduce_compression(hvd, mode, compression):
    c = getattr(hvd.Compression, compression)
    x = tf.constant(np.linspace(-1, 1, 33) * (hvd.rank() + 1), tf.float32)
    got = run_in(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, compression=c, name="cmp"), x)
    want = np.linspace(-1, 1, 33) * sum(range(1, hvd.size() + 1))
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-2, atol=2e-2)
    # Compression leaves other dtypes alone.
    ints = run_in(
        mode,
        lambda t: hvd.allreduce(t, op=hvd.Sum, compression=c, name="cmp.i"),
        tf.constant([hvd.rank()], tf.int64),
    )
    assert ints.numpy()[0] == sum(range(hvd.size()))


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_mixed_dtypes(hvd, mode):
    r, n = hvd.rank(), hvd.size()
    tensors = [tf.fill([4], float(r)), tf.fill([2, 3], float(2 * r)), tf.constant([r], tf.int32)]

    def fn(*ts):
        return hvd.grouped_allreduce(list(ts), op=hvd.Sum, name="group")

    a, b, c = run_in(mode, fn, *tensors)
    s = sum(range(n))
    np.testing.assert_allclose(a.numpy(), np.full([4], s))
    np.testing.assert_allclose(b.numpy(), np.full([2, 3], 2 * s))
    assert c.dtype == tf.int32 and c.numpy()[0] == s


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "dtype", [tf.float32, tf.int64, tf.bfloat16, tf.bool, tf.uint8], ids=lambda d: d.name
)
def test_allgather_uneven_rows(hvd, mode, dtype):
    r, n = hvd.rank(), hvd.size()
    x = value(dtype, r, [r + 1, 2])
    got = run_in(mode, lambda t: hvd.allgather(t, name="ag"), x)
    want = np.concatenate([as_float(value(dtype, k, [k + 1, 2])) for k in range(n)])
    assert got.dtype == dtype
    np.testing.assert_array_equal(as_float(got), want)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_from_every_root(hvd, mode):
    for root in range(hvd.size()):
        x = tf.fill([3, 2], float(hvd.rank() * 10))
        got = run_in(mode, lambda t, root=root: hvd.broadcast(t, root, name=f"bc.{root}"), x)
        np.testing.assert_array_equal(got.numpy(), np.full([3, 2], root * 10.0))
        assert x.numpy()[0, 0] == hvd.rank() * 10  # the input is left alone


@pytest.mark.parametrize("mode", MODES)
def test_alltoall_even_and_uneven(hvd, mode):
    r, n = hvd.rank(), hvd.size()
    x = tf.constant([[100 * r + p] for p in range(n)], tf.int32)
    got, splits = run_in(mode, lambda t: hvd.alltoall(t, name="a2a.even"), x)
    np.testing.assert_array_equal(got.numpy()[:, 0], [100 * p + r for p in range(n)])
    np.testing.assert_array_equal(splits.numpy(), [1] * n)
    # Rank r sends p + 1 rows to rank p: each rank receives rank + 1 rows from everyone.
    send = [p + 1 for p in range(n)]
    rows = np.concatenate([[1000 * r + p] * (p + 1) for p in range(n)]).astype(np.float32)
    got, splits = run_in(
        mode,
        lambda t, s: hvd.alltoall(t, splits=s, name="a2a.uneven"),
        tf.constant(rows),
        tf.constant(send, tf.int64),
    )
    np.testing.assert_array_equal(splits.numpy(), [r + 1] * n)
    np.testing.assert_array_equal(
        got.numpy(), np.concatenate([[1000 * p + r] * (r + 1) for p in range(n)])
    )


@pytest.mark.parametrize("mode", MODES)
def test_reducescatter(hvd, mode):
    r, n = hvd.rank(), hvd.size()
    rows = 2 * n + 1  # the first rank gets one row more
    x = tf.constant(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) * (r + 1))
    got = run_in(mode, lambda t: hvd.reducescatter(t, op=hvd.Sum, name="rs"), x)
    full = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) * sum(range(1, n + 1))
    counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
    begin = sum(counts[:r])
    np.testing.assert_allclose(got.numpy(), full[begin : begin + counts[r]])
    avg = run_in(mode, lambda t: hvd.reducescatter(t, name="rs.avg"), x)
    np.testing.assert_allclose(avg.numpy(), full[begin : begin + counts[r]] / n, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_barrier_and_join(hvd, mode):
    def barrier():
        hvd.barrier()  # inside a tf.function, automatic control dependencies run it

    run_in(mode, barrier)
    if mode == "eager":
        assert hvd.join() in range(hvd.size())
    else:
        last = tf.function(hvd.join)()
        assert int(last) in range(hvd.size())


def test_graph_collectives_overlap(hvd):
    """Independent collectives in one tf.function are in flight together (they fuse)."""
    xs = [tf.fill([16], float(i + hvd.rank())) for i in range(12)]

    @tf.function
    def step(*ts):
        return [hvd.allreduce(t, op=hvd.Sum) for t in ts]

    step(*xs)  # trace and warm the response cache
    before = hora.engine_stats()
    out = step(*xs)
    after = hora.engine_stats()
    for i, o in enumerate(out):
        np.testing.assert_allclose(o.numpy(), sum(i + k for k in range(hvd.size())))
    if hvd.size() > 1:
        # 12 allreduces, fewer buckets: several went out fused.
        assert after["buckets"] - before["buckets"] < 12, (before, after)


def test_constant_input_is_not_folded(hvd):
    """A collective of a constant inside a tf.function still runs at every call."""

    @tf.function
    def fn():
        return hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum, name="const")

    fn()
    before = hora.engine_stats()
    np.testing.assert_allclose(fn().numpy(), [hvd.size(), 2.0 * hvd.size()])
    after = hora.engine_stats()
    assert after["cache_hits"] + after["coordinated"] > before["cache_hits"] + before["coordinated"]


def test_broadcast_variables_and_objects(hvd):
    v = tf.Variable(tf.fill([4], float(hvd.rank())))
    w = tf.Variable([[hvd.rank() * 1.5]])
    hvd.broadcast_variables([v, w], root_rank=0)
    np.testing.assert_array_equal(v.numpy(), np.zeros(4))
    assert w.numpy()[0, 0] == 0.0
    root = hvd.size() - 1
    got = hvd.broadcast_object({"rank": hvd.rank(), "list": [1, 2]}, root_rank=root)
    assert got == {"rank": root, "list": [1, 2]}
    assert hvd.allgather_object(hvd.rank()) == list(range(hvd.size()))


def test_sparse_allreduce_gathers_slices(hvd):
    r, n = hvd.rank(), hvd.size()
    slices = tf.IndexedSlices(
        tf.fill([1, 2], float(r + 1)), tf.constant([r]), dense_shape=tf.constant([n, 2])
    )
    got = hvd.allreduce(slices, op=hvd.Sum, name="sparse")
    assert isinstance(got, tf.IndexedSlices)
    np.testing.assert_array_equal(got.indices.numpy(), np.arange(n))
    np.testing.assert_array_equal(
        tf.convert_to_tensor(got).numpy(), [[k + 1.0, k + 1.0] for k in range(n)]
    )
