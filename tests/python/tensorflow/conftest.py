"""Settings for hora.tensorflow's tests: quiet TensorFlow, few threads per rank (up to four
ranks share the machine's cores), and the `hvd` fixture (hora.tensorflow, initialised)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)


@pytest.fixture(scope="session")
def hvd(hora_job):
    import hora.tensorflow

    return hora.tensorflow
