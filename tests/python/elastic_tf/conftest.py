"""hora.tensorflow.elastic / hora.keras.elastic's tests: TensorFlow in processes of its own
(never beside torch), quiet and with few threads per rank."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)


@pytest.fixture(scope="session", autouse=True)
def job():
    import hora.tensorflow as hvd

    hvd.init()
    yield
    hvd.shutdown()
