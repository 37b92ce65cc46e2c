"""A user's first hora.keras program, run by pip_install_test.sh under horarun -np N.

Imports the installed hora.keras, checks hora came from where the install under test put it
(argv[1], a path prefix) and that the TensorFlow op library was loaded from argv[2] (a path
prefix: the extension cache, when the wheel had no prebuilt library), then trains a small
model for 2 epochs with model.fit, each rank on its shard of synthetic data, starting from
different weights that the broadcast callback makes equal. Checks that the loss is finite
and the weights are bitwise the same on every rank. Prints "pip_keras_smoke: rank R of N ok"
on success; raises otherwise.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

import hora
import hora.keras as hk
from hora.tensorflow import _library

expected_prefix, library_prefix = sys.argv[1:3]
if not hora.__file__.startswith(expected_prefix):
    raise SystemExit(
        f"pip_keras_smoke: hora imported from {hora.__file__}, expected under {expected_prefix}"
    )
if not _library.PATH.startswith(library_prefix):
    raise SystemExit(
        f"pip_keras_smoke: op library {_library.PATH}, expected under {library_prefix}"
    )
tf.config.threading.set_intra_op_parallelism_threads(1)

hk.init()
rank, size = hk.rank(), hk.size()
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype(np.float32)
y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.1)[:, None]

keras.utils.set_random_seed(rank)  # different initial weights: the callback must equalise them
model = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
)
model.compile(optimizer=hk.DistributedOptimizer(keras.optimizers.SGD(0.05)), loss="mse")
history = model.fit(
    x[rank::size],
    y[rank::size],
    batch_size=8,
    epochs=2,
    shuffle=False,
    verbose=0,
    callbacks=[hk.callbacks.BroadcastGlobalVariablesCallback(0)],
)
losses = history.history["loss"]
if not np.all(np.isfinite(losses)):
    raise SystemExit(f"pip_keras_smoke: rank {rank}: losses {losses}")

weights = np.concatenate([w.ravel() for w in model.get_weights()])
gathered = hk.allgather(tf.constant(weights[None].view(np.uint8)), name="pip_keras_smoke.w").numpy()
for r, row in enumerate(gathered):
    if not np.array_equal(row, gathered[0]):
        raise SystemExit(f"pip_keras_smoke: rank {r}'s weights differ from rank 0's")
hk.shutdown()
print(
    f"pip_keras_smoke: rank {rank} of {size} ok (loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
    f"op library {_library.PATH})"
)
