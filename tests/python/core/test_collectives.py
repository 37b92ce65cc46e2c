"""Every collective x dtype x op through hora's NumPy API, against a NumPy reference, with
identical bits on every rank."""

import hashlib

import numpy as np
import pytest

import hora
from hora import _numpy_alloc

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "uint16", "int32", "int64"]
DTYPES = INTS + FLOATS + ["bool"]
OPS = {
    "sum": hora.Sum,
    "average": hora.Average,
    "min": hora.Min,
    "max": hora.Max,
    "product": hora.Product,
}


def ops_for(dtype):
    if dtype == "bool":
        return ["min", "max", "product"]
    return list(OPS)


def value(dtype, rank, shape, salt=0):
    """input[i] = f(rank, i): small values, so sums and products stay exact in every dtype."""
    n = int(np.prod(shape)) if shape else 1
    i = np.arange(n, dtype=np.int64)
    if dtype == "bool":
        v = ((i + rank + salt) % 3) != 0
    elif dtype in FLOATS:
        v = ((i * 7 + rank * 3 + salt) % 5).astype(np.float64) - 1.0  # -1..3
    elif dtype in ("uint8", "uint16"):
        v = (i + rank + salt) % 3 + 1
    else:
        v = (i * 5 + rank + salt) % 5 - 2
    return v.reshape(shape).astype(_numpy_alloc.numpy_dtype(dtype))


def reference(dtype, op, size, shape, salt=0):
    vals = [
        value(dtype, r, shape, salt).astype(np.float64 if dtype != "bool" else bool)
        for r in range(size)
    ]
    if dtype == "bool":
        if op in ("min", "product"):
            out = np.logical_and.reduce(vals)
        else:
            out = np.logical_or.reduce(vals)
        return np.asarray(out)
    stack = np.stack(vals)
    if op == "sum":
        out = stack.sum(0)
    elif op == "average":
        out = stack.sum(0) / size
    elif op == "min":
        out = stack.min(0)
    elif op == "max":
        out = stack.max(0)
    else:
        out = stack.prod(0)
    return out


def tolerance(dtype):
    return {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6}.get(dtype, 1e-12)


def check_close(got, want, dtype, op):
    g = np.asarray(got).astype(np.float64 if dtype != "bool" else bool)
    if dtype == "bool":
        np.testing.assert_array_equal(g, want)
    elif dtype in FLOATS:
        np.testing.assert_allclose(g, want, rtol=tolerance(dtype), atol=tolerance(dtype))
    elif op == "average":
        # Integer averages divide in the integer type's arithmetic (truncation toward zero or
        # floor, as the kernel documents): within one of the exact mean.
        assert np.all(np.abs(g - want) <= 1.0), (g, want)
    else:
        np.testing.assert_array_equal(g, want.astype(np.float64))


def assert_same_on_every_rank(array):
    digest = np.frombuffer(
        hashlib.sha256(np.ascontiguousarray(array).tobytes()).digest()[:8], dtype=np.int64
    ).copy()
    lo = hora.allreduce(digest, op=hora.Min, name="check.digest.min")
    hi = hora.allreduce(digest, op=hora.Max, name="check.digest.max")
    assert lo[0] == hi[0] == digest[0], "results differ across ranks"


SHAPES = [(), (0,), (1,), (7,), (3, 4), (2, 3, 1, 5), (1031,)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_allreduce_every_op(hora_job, rank, size, dtype):
    for op in ops_for(dtype):
        for shape in SHAPES:
            x = value(dtype, rank, shape)
            out = hora.allreduce(x, op=OPS[op], name=f"ar.{dtype}.{op}.{shape}")
            assert out.shape == x.shape and out.dtype == x.dtype
            check_close(out, reference(dtype, op, size, shape), dtype, op)
            assert_same_on_every_rank(out)
            # in place
            y = value(dtype, rank, shape)
            z = hora.allreduce_(y, op=OPS[op], name=f"ar_.{dtype}.{op}.{shape}")
            assert z is y
            np.testing.assert_array_equal(y, out)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_allreduce_scale_factors(hora_job, rank, size, dtype):
    x = value(dtype, rank, (33,))
    out = hora.allreduce(
        x, op=hora.Sum, prescale_factor=2.0, postscale_factor=0.5, name=f"scaled.{dtype}"
    )
    check_close(out, reference(dtype, "sum", size, (33,)), dtype, "sum")


def test_allreduce_average_flag(hora_job, size):
    x = np.full(5, 2.0, np.float32)
    np.testing.assert_allclose(hora.allreduce(x, average=False, name="avgflag.sum"), 2.0 * size)
    np.testing.assert_allclose(hora.allreduce(x, average=True, name="avgflag.avg"), 2.0)


@pytest.mark.parametrize("compression", [hora.Compression.fp16, hora.Compression.bf16])
def test_allreduce_compression(hora_job, rank, size, compression):
    x = value("float32", rank, (257,))
    out = hora.allreduce(x, op=hora.Sum, compression=compression, name=f"comp.{compression}")
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, reference("float32", "sum", size, (257,)), rtol=1e-2, atol=1e-2)
    assert_same_on_every_rank(out)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16", "bool"])
def test_grouped_allreduce(hora_job, rank, size, dtype):
    op = "max" if dtype == "bool" else "sum"
    xs = [value(dtype, rank, (n,), salt=n) for n in (1, 17, 0, 300)]
    outs = hora.grouped_allreduce(xs, op=OPS[op], name=f"group.{dtype}")
    assert len(outs) == 4
    for n, out in zip((1, 17, 0, 300), outs, strict=True):
        check_close(out, reference(dtype, op, size, (n,), salt=n), dtype, op)
    ins = [x.copy() for x in xs]
    back = hora.grouped_allreduce_(ins, op=OPS[op], name=f"group_.{dtype}")
    for a, b in zip(back, outs, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather(hora_job, rank, size, dtype):
    # Rank r contributes r + 1 rows of shape (3, 2).
    x = value(dtype, rank, (rank + 1, 3, 2))
    out = hora.allgather(x, name=f"ag.{dtype}")
    want = np.concatenate([value(dtype, r, (r + 1, 3, 2)) for r in range(size)])
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, want)
    # zero rows on every rank
    empty = hora.allgather(value(dtype, rank, (0, 4)), name=f"ag0.{dtype}")
    assert empty.shape == (0, 4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(hora_job, rank, size, dtype):
    for root in range(size):
        x = value(dtype, rank, (4, 5))
        out = hora.broadcast(x, root, name=f"bc.{dtype}.{root}")
        np.testing.assert_array_equal(out, value(dtype, root, (4, 5)))
        np.testing.assert_array_equal(x, value(dtype, rank, (4, 5)))  # out of place
        hora.broadcast_(x, root, name=f"bc_.{dtype}.{root}")
        np.testing.assert_array_equal(x, value(dtype, root, (4, 5)))


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32", "float64", "bool"])
def test_alltoall(hora_job, rank, size, dtype):
    # Rank r sends p + 1 rows to rank p; row values encode (sender, receiver).
    splits = [p + 1 for p in range(size)]
    rows = sum(splits)
    x = value(dtype, rank, (rows, 2))
    out, received = hora.alltoall(x, splits=splits, name=f"a2a.{dtype}")
    assert list(received) == [rank + 1] * size
    offsets = np.cumsum([0, *splits])
    want = np.concatenate(
        [value(dtype, r, (rows, 2))[offsets[rank] : offsets[rank + 1]] for r in range(size)]
    )
    np.testing.assert_array_equal(out, want)
    even = hora.alltoall(value(dtype, rank, (2 * size, 3)), name=f"a2a.even.{dtype}")
    assert even.shape == (2 * size, 3)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "uint16"])
def test_reducescatter(hora_job, rank, size, dtype):
    rows = 2 * size + 1
    x = value(dtype, rank, (rows, 3))
    out = hora.reducescatter(x, op=hora.Sum, name=f"rs.{dtype}")
    full = reference(dtype, "sum", size, (rows, 3))
    counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
    start = sum(counts[:rank])
    check_close(out, full[start : start + counts[rank]], dtype, "sum")


def test_barrier_and_join(hora_job, size):
    hora.barrier()
    assert hora.join() in range(size)


def test_engine_stats(hora_job):
    stats = hora.engine_stats()
    assert stats["rounds"] > 0 and set(stats) >= {"cache_hits", "buckets", "errors"}


def test_layout(hora_job, rank, size):
    assert 0 <= hora.local_rank() < hora.local_size() <= size
    assert 0 <= hora.cross_rank() < hora.cross_size()
    assert hora.backend() in ("builtin", "gloo", "mpi")
    assert isinstance(hora.mpi_threads_supported(), bool)


def test_grouped_allreduce_mixed_dtypes(hora_job, rank, size):
    # One group, members of three dtypes: each dtype is reduced in a bucket of its own.
    xs = [
        np.full(5, rank + 1, np.float32),
        np.full(3, rank + 1, np.float64),
        np.full(4, rank + 1, np.int32),
        np.full(2, rank + 1, np.float32),
    ]
    outs = hora.grouped_allreduce(xs, op=hora.Sum, name="group.mixed")
    total = size * (size + 1) / 2
    for x, out in zip(xs, outs, strict=True):
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(out, np.full(x.shape, total).astype(x.dtype))
