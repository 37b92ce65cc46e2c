"""Bad input raises a hora.errors exception that names the tensor and what was expected; a
tensor that differs across ranks raises on every rank, and the next collective works."""

import array

import numpy as np
import pytest

import hora


def test_non_contiguous_is_refused(hora_job):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::2]
    with pytest.raises(hora.InvalidArgumentError, match=r"tensor 'strided'.*not contiguous"):
        hora.allreduce(x, name="strided")


def test_unsupported_dtype(hora_job):
    with pytest.raises(hora.InvalidArgumentError, match=r"tensor 'cplx'.*does not support"):
        hora.allreduce(np.ones(3, np.complex64), name="cplx")


def test_not_a_tensor(hora_job):
    with pytest.raises(hora.InvalidArgumentError, match=r"tensor 'obj'.*not a tensor"):
        hora.allreduce_(object(), name="obj")


def test_read_only_output(hora_job):
    x = np.ones(4, np.float32)
    x.flags.writeable = False
    with pytest.raises(hora.InvalidArgumentError, match=r"tensor 'ro'.*read-only"):
        hora.allreduce_(x, name="ro")


def test_bool_sum_refused(hora_job):
    with pytest.raises(hora.InvalidArgumentError, match=r"bool"):
        hora.allreduce(np.ones(3, bool), op=hora.Sum, name="boolsum")


def test_bad_op_and_name(hora_job):
    with pytest.raises(ValueError, match="op"):
        hora.allreduce(np.ones(3, np.float32), op="sum")
    with pytest.raises(ValueError, match="name"):
        hora.allreduce(np.ones(3, np.float32), name=5)
    with pytest.raises(hora.InvalidArgumentError, match="adasum is not defined for int32"):
        hora.allreduce(np.ones(3, np.int32), op=hora.Adasum, name="err.adasum")


def test_compression_needs_float32(hora_job):
    with pytest.raises(hora.InvalidArgumentError, match=r"tensor 'c64'"):
        hora.allreduce(np.ones(3, np.float64), compression=hora.Compression.fp16, name="c64")


def test_bad_root(hora_job, size):
    with pytest.raises(hora.InvalidArgumentError, match=r"root"):
        hora.broadcast_(np.ones(3, np.float32), size + 3, name="badroot")


def test_buffer_protocol(hora_job, size):
    a = array.array("d", [1.0, 2.0, 3.0])
    hora.allreduce_(a, op=hora.Sum, name="buffer.array")
    assert list(a) == [size * 1.0, size * 2.0, size * 3.0]


def test_shape_mismatch_raises_on_every_rank(hora_job, rank, size):
    if size == 1:
        pytest.skip("a mismatch needs two ranks")
    x = np.ones(4 + (rank == size - 1), np.float32)
    with pytest.raises(hora.MismatchError, match=r"tensor 'mismatch.shape'.*shape"):
        hora.allreduce(x, name="mismatch.shape")
    # The next collective works.
    np.testing.assert_allclose(
        hora.allreduce(np.ones(2, np.float32), op=hora.Sum, name="after.mismatch"), size
    )


def test_dtype_mismatch_raises_on_every_rank(hora_job, rank, size):
    if size == 1:
        pytest.skip("a mismatch needs two ranks")
    x = np.ones(4, np.float32 if rank == 0 else np.float64)
    with pytest.raises(hora.MismatchError, match=r"tensor 'mismatch.dtype'.*float"):
        hora.allreduce(x, name="mismatch.dtype")


def test_allocator_error(hora_job, rank, size):
    def bad(dtype, shape):
        raise RuntimeError("no memory today")

    allocator = bad if rank == 0 else None
    if rank == 0:
        with pytest.raises(hora.InvalidArgumentError, match="no memory today"):
            hora.allgather(np.ones((1, 2), np.float32), name="badalloc", allocator=allocator)
    else:
        out = hora.allgather(np.ones((1, 2), np.float32), name="badalloc")
        assert out.shape == (size, 2)
    # The job goes on.
    hora.barrier()
