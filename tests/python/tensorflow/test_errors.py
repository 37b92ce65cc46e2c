"""Failures raise on every rank with hora's message: eagerly as the hora.errors class,
inside a tf.function as TensorFlow's error whose message names that class."""

import numpy as np
import pytest
import tensorflow as tf

import hora


def test_shape_mismatch_raises_on_every_rank(hvd):
    if hvd.size() == 1:
        pytest.skip("needs two ranks to disagree")
    with pytest.raises(hora.MismatchError, match=r"tensor 'err\.shape'.*rank 0.*rank 1"):
        hvd.allreduce(tf.ones([hvd.rank() + 1]), name="err.shape")


def test_dtype_mismatch_in_tf_function(hvd):
    if hvd.size() == 1:
        pytest.skip("needs two ranks to disagree")
    dtype = tf.float32 if hvd.rank() == 0 else tf.float64

    @tf.function
    def fn():
        return hvd.allreduce(tf.ones([2], dtype), name="err.dtype")

    with pytest.raises(tf.errors.OpError, match=r"hora\.MismatchError: tensor 'err\.dtype'"):
        fn()


def test_root_mismatch_names_the_roots(hvd):
    if hvd.size() == 1:
        pytest.skip("needs two ranks to disagree")
    with pytest.raises(hora.MismatchError, match=r"err\.root"):
        hvd.broadcast(tf.ones([2]), root_rank=hvd.rank() % 2, name="err.root")


def test_bad_root_and_unsupported_ops(hvd):
    with pytest.raises(hora.HoraError, match=r"err\.badroot"):
        hvd.broadcast(tf.ones([2]), root_rank=hvd.size() + 3, name="err.badroot")
    with pytest.raises(hora.InvalidArgumentError, match="adasum is not defined for int32"):
        hvd.allreduce(tf.ones([2], tf.int32), op=hvd.Adasum, name="err.adasum")
    with pytest.raises(hora.InvalidArgumentError, match=r"err\.scalar"):
        hvd.allgather(tf.constant(1.0), name="err.scalar")
    with pytest.raises(hora.InvalidArgumentError, match="bool"):
        hvd.allreduce(tf.constant([True]), op=hvd.Sum, name="err.boolsum")


def test_engine_keeps_working_after_errors(hvd):
    got = hvd.allreduce(tf.fill([3], float(hvd.rank())), op=hvd.Sum, name="err.after")
    np.testing.assert_allclose(got.numpy(), sum(range(hvd.size())))
