"""Data-parallel Keras training with hora.keras: model.fit on every rank, gradients averaged.

A single-process Keras 3 script made distributed by the lines marked "hora": run it with

    horarun -np 2 python examples/tensorflow/keras_fit.py

The data set is synthetic and seeded (10 classes of 64 features drawn around class centres),
so nothing is downloaded; every rank trains on its own shard of it.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

import hora.keras as hvd  # hora (1/5): Horovod's Keras API


def synthetic(count, seed):
    """`count` rows of 64 features in 10 classes: a class's fixed centre plus noise."""
    centres = np.random.default_rng(0).normal(size=(10, 64)).astype(np.float32)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, count)
    return centres[labels] + 3.0 * rng.normal(size=(count, 64)).astype(np.float32), labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=0.001, help="scaled by the number of ranks")
    parser.add_argument("--samples", type=int, default=16384)
    args = parser.parse_args()

    hvd.init()  # hora (2/5)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    keras.utils.set_random_seed(1234)

    x, y = synthetic(args.samples, seed=1)
    x_test, y_test = synthetic(2048, seed=2)
    x, y = x[hvd.rank() :: hvd.size()], y[hvd.rank() :: hvd.size()]  # each rank its own shard

    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    # hora (3/5): wrap the optimizer; the learning rate grows with the global batch.
    optimizer = hvd.DistributedOptimizer(keras.optimizers.Adam(args.lr * hvd.size()))
    model.compile(
        optimizer=optimizer,
        metrics=["accuracy"],
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    callbacks = [
        # hora (4/5): start every rank from rank 0's weights; average the metrics over ranks.
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.callbacks.MetricAverageCallback(),
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=args.lr * hvd.size(), warmup_epochs=1),
    ]
    start = time.perf_counter()
    history = model.fit(
        x,
        y,
        batch_size=args.batch_size,
        epochs=args.epochs,
        shuffle=True,
        callbacks=callbacks,
        verbose=0,
    )
    seconds = time.perf_counter() - start
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    if hvd.rank() == 0:  # hora (5/5): one rank reports
        for epoch, loss in enumerate(history.history["loss"], 1):
            print(f"epoch {epoch}: loss {loss:.4f} (averaged over {hvd.size()} ranks)")
        print(
            f"held-out accuracy {100 * accuracy:.1f}%, trained on {hvd.size()} ranks in "
            f"{seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
