"""reducescatter's prescale and postscale factors (Horovod 0.28's) against NumPy, for the
framework-neutral API; a disagreement between ranks is a MismatchError naming them."""

import numpy as np
import pytest

import hora


def rows_of(rank, count):
    i = np.arange(count * 2, dtype=np.float32).reshape(count, 2)
    return i % 5 + rank * 2


def block_of(rank, size, rows):
    base, extra = divmod(rows, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


@pytest.mark.parametrize("op", [hora.Sum, hora.Average, hora.Max], ids=["sum", "average", "max"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.5, 3.0), (-2.0, 0.25)], ids=str)
def test_scaled_reducescatter_matches_numpy(hora_job, rank, size, op, scales):
    pre, post = scales
    rows = 3 * size + 2
    inputs = [pre * rows_of(r, rows).astype(np.float64) for r in range(size)]
    if op == hora.Max:
        total = np.max(inputs, axis=0)
    else:
        total = np.sum(inputs, axis=0) / (size if op == hora.Average else 1)
    start, stop = block_of(rank, size, rows)
    got = hora.reducescatter(
        rows_of(rank, rows),
        name=f"rs.np.{op}.{pre}",
        op=op,
        prescale_factor=pre,
        postscale_factor=post,
    )
    np.testing.assert_allclose(got, (post * total)[start:stop], rtol=1e-6)


def test_integer_tensors_scale_and_round(hora_job, rank, size):
    x = np.full((size, 2), rank + 1, np.int32)
    got = hora.reducescatter(x, op=hora.Sum, prescale_factor=2.0, postscale_factor=0.5)
    np.testing.assert_array_equal(got, np.full((1, 2), size * (size + 1) // 2, np.int32))


def test_ranks_disagreeing_on_a_factor_fail_with_mismatch(hora_job, rank, size):
    if size == 1:
        pytest.skip("needs two ranks to disagree")
    with pytest.raises(hora.MismatchError, match=r"reducescatter prescale"):
        hora.reducescatter(
            np.ones((size, 2), np.float32), name="rs.np.mismatch", prescale_factor=1.0 + rank
        )


def test_non_finite_factor_is_refused_at_the_call(hora_job):
    with pytest.raises(ValueError, match="must be finite"):
        hora.reducescatter_async(
            np.ones((hora.size(), 2), np.float32), postscale_factor=float("nan")
        )
