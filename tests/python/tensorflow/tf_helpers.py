"""Helpers shared by hora.tensorflow's tests."""

import numpy as np
import tensorflow as tf


def run_in(mode, fn, *args):
    """fn(*args) eagerly, or traced into a tf.function and run once."""
    if mode == "eager":
        return fn(*args)
    return tf.function(fn)(*args)


def all_ranks_agree(hvd, value, name):
    """Asserts that `value` (a NumPy array) is bitwise the same on every rank."""
    value = np.ascontiguousarray(value)
    flat = tf.constant(value.reshape(1, -1).view(np.uint8))
    gathered = hvd.allgather(flat, name=f"agree.{name}").numpy()
    for row in gathered:
        np.testing.assert_array_equal(row, gathered[0])


def relative_error(got, want):
    """||got - want|| / ||want|| (the absolute error when want is zero)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = np.linalg.norm(want)
    return np.linalg.norm(got - want) / (scale if scale > 0 else 1.0)


def shard_batches(array, global_batch, rank, size):
    """Rank `rank`'s rows: the rank-th 1/size slice of every global batch, in order, so that
    batch k of the shard is rank's part of global batch k."""
    per_rank = global_batch // size
    parts = [
        array[k + rank * per_rank : k + (rank + 1) * per_rank]
        for k in range(0, len(array), global_batch)
    ]
    return np.concatenate(parts)
