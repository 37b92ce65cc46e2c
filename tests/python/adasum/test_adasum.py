"""op=hora.Adasum through hora's NumPy API (the engine's path: single and grouped allreduce,
fused buckets with per-tensor dot products) against the NumPy reference, every float dtype,
identical bits on every rank; and the refusals."""

import hashlib

import numpy as np
import pytest
from adasum_reference import adasum_pair, adasum_tree

import hora
from hora import _numpy_alloc

FLOATS = ["float16", "bfloat16", "float32", "float64"]
TOL = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5, "float64": 1e-12}


def vector(dtype, rank, n, salt=0):
    rng = np.random.default_rng(1000 * salt + rank)
    return rng.standard_normal(n).astype(_numpy_alloc.numpy_dtype(dtype))


def as64(x):
    return np.asarray(x).astype(np.float64)


def assert_same_on_every_rank(array):
    digest = np.frombuffer(
        hashlib.sha256(np.ascontiguousarray(array).tobytes()).digest()[:8], dtype=np.int64
    ).copy()
    lo = hora.allreduce(digest, op=hora.Min, name="adasum.digest.min")
    hi = hora.allreduce(digest, op=hora.Max, name="adasum.digest.max")
    assert lo[0] == hi[0] == digest[0], "results differ across ranks"


def check(got, want, dtype):
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(as64(got).ravel(), want, rtol=0, atol=TOL[dtype] * scale)


def test_pairwise_rule_reference():
    """The reference's own cases: orthogonal vectors sum, parallel ones average, a zero
    vector gives the other."""
    a, b = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    np.testing.assert_allclose(adasum_pair(a, b), a + b)
    np.testing.assert_allclose(adasum_pair(a, 3 * a), 2 * a)
    np.testing.assert_allclose(adasum_pair(np.zeros(2), b), b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_orthogonal_sum_and_identical(hora_job, rank, size, dtype):
    n = 4 * size + 1
    x = np.zeros(n)
    x[rank::size] = 1.0 + 0.5 * rank
    out = hora.allreduce(x.astype(_numpy_alloc.numpy_dtype(dtype)), op=hora.Adasum, name="o")
    want = sum(np.where(np.arange(n) % size == r, 1.0 + 0.5 * r, 0.0) for r in range(size))
    check(out, want, dtype)
    assert_same_on_every_rank(out)
    same = vector(dtype, 0, 101)
    check(hora.allreduce(same, op=hora.Adasum, name=f"same.{dtype}"), as64(same), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mixed_matches_reference(hora_job, rank, size, dtype):
    x = vector(dtype, rank, 1031) + (0.5 if rank % 2 else 0.0)  # partly aligned
    x = x.astype(_numpy_alloc.numpy_dtype(dtype))
    out = hora.allreduce(x, op=hora.Adasum, name=f"mixed.{dtype}")
    assert out.dtype == x.dtype and out.shape == x.shape
    want = adasum_tree(
        [as64(vector(dtype, r, 1031) + (0.5 if r % 2 else 0.0)) for r in range(size)]
    )
    check(out, want, dtype)
    assert_same_on_every_rank(out)
    y = x.copy()
    assert hora.allreduce_(y, op=hora.Adasum, name=f"mixed_.{dtype}") is y
    np.testing.assert_array_equal(y, out)


@pytest.mark.parametrize("dtype", FLOATS)
def test_grouped_per_tensor(hora_job, rank, size, dtype):
    """A grouped allreduce is one fused bucket: each tensor still gets its own coefficients."""
    shapes = [(1,), (17,), (0,), (30, 10), (size + 1,)]
    xs = [vector(dtype, rank, int(np.prod(s)), salt=i).reshape(s) for i, s in enumerate(shapes)]
    outs = hora.grouped_allreduce(xs, op=hora.Adasum, name=f"group.{dtype}")
    for i, (s, out) in enumerate(zip(shapes, outs, strict=True)):
        assert out.shape == s
        n = int(np.prod(s))
        want = adasum_tree([as64(vector(dtype, r, n, salt=i)) for r in range(size)])
        check(out, want, dtype)
        assert_same_on_every_rank(out)


def test_scale_factors(hora_job, rank, size):
    """prescale and postscale multiply every contribution and the result: Adasum's
    coefficients are invariant to a common scale, so the result scales with their product."""
    x = vector("float64", rank, 64)
    base = hora.allreduce(x, op=hora.Adasum, name="scale.base")
    scaled = hora.allreduce(
        x, op=hora.Adasum, prescale_factor=2.0, postscale_factor=0.25, name="scale.scaled"
    )
    np.testing.assert_allclose(scaled, 0.5 * base, rtol=1e-12, atol=1e-12)


def test_refusals(hora_job, size):
    with pytest.raises(hora.InvalidArgumentError, match="adasum is not defined for int32"):
        hora.allreduce(np.arange(4, dtype=np.int32), op=hora.Adasum, name="bad.int")
    with pytest.raises(hora.InvalidArgumentError, match="adasum is not defined for bool"):
        hora.allreduce(np.ones(4, dtype=bool), op=hora.Adasum, name="bad.bool")
    with pytest.raises(hora.InvalidArgumentError, match="reducescatter does not take op adasum"):
        hora.reducescatter(np.ones(4 * size, np.float32), op=hora.Adasum, name="bad.rs")


def test_compression(hora_job, rank, size):
    """Compression.fp16 casts the float32 tensor to float16 in the engine; Adasum runs on it."""
    x = vector("float32", rank, 300)
    out = hora.allreduce(x, op=hora.Adasum, compression=hora.Compression.fp16, name="comp")
    assert out.dtype == np.float32
    check(out, adasum_tree([as64(vector("float32", r, 300)) for r in range(size)]), "float16")
    assert_same_on_every_rank(out)


def test_joined_rank_contributes_zeros(hora_job, rank, size):
    """A rank that has joined contributes zeros, which Adasum passes over (a zero vector's
    combination with v is v)."""
    if rank == size - 1:
        hora.join()
        return
    out = hora.allreduce(vector("float64", rank, 50), op=hora.Adasum, name="join.adasum")
    xs = [as64(vector("float64", r, 50)) for r in range(size - 1)] + [np.zeros(50)]
    check(out, adasum_tree(xs), "float64")
    hora.join()
