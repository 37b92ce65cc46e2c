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
