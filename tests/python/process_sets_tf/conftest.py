"""Settings for the process-set tests of hora.tensorflow and hora.keras: the set shapes of
../process_sets/helpers.py and hora.tensorflow's test helpers (../tensorflow/tf_helpers.py)
importable, quiet TensorFlow, few threads per rank. Each test owns init and shutdown (the sets
are part of init), as ../process_sets/ does."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
for _folder in ("process_sets", "tensorflow"):
    sys.path.insert(0, os.path.join(_HERE, "..", _folder))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)
