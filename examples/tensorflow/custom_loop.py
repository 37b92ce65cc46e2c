"""A custom TensorFlow training loop made data-parallel with hora.tensorflow's
DistributedGradientTape (Horovod's API), inside a tf.function.

    horarun -np 2 python examples/tensorflow/custom_loop.py

The lines marked "hora" are the change from the single-process loop. Synthetic, seeded data
(a noisy linear map with a ReLU layer to learn); every rank trains on its own shard.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

import hora.tensorflow as hvd  # hora (1/5)


def synthetic(count, seed):
    w = np.random.default_rng(0).normal(size=(32, 8)).astype(np.float32)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, 32)).astype(np.float32)
    return x, np.maximum(x @ w, 0) + 0.1 * rng.normal(size=(count, 8)).astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.01, help="scaled by the number of ranks")
    args = parser.parse_args()

    hvd.init()  # hora (2/5)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    keras.utils.set_random_seed(7 + hvd.rank())  # ranks start apart: the broadcast fixes that

    x, y = synthetic(args.steps * args.batch_size, seed=100 + hvd.rank())  # this rank's shard
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(8)]
    )
    optimizer = keras.optimizers.SGD(args.lr * hvd.size(), momentum=0.9)

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
        tape = hvd.DistributedGradientTape(tape)  # hora (3/5): gradients averaged over ranks
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    start = time.perf_counter()
    for step in range(args.steps):
        rows = slice(step * args.batch_size, (step + 1) * args.batch_size)
        loss = train_step(x[rows], y[rows])
        if step == 0:
            # hora (4/5): after the first step built the optimizer's variables, every rank
            # takes rank 0's model and optimizer state.
            hvd.broadcast_variables(model.variables + optimizer.variables, root_rank=0)
        if step % 100 == 0 or step == args.steps - 1:
            mean = hvd.allreduce(loss, name="loss")  # hora (5/5): the loss averaged over ranks
            if hvd.rank() == 0:
                print(f"step {step}: loss {float(mean):.4f}")
    x_test, y_test = synthetic(1024, seed=999)
    test_loss = float(tf.reduce_mean(tf.square(model(x_test) - y_test)))
    if hvd.rank() == 0:
        print(
            f"held-out loss {test_loss:.4f}, trained on {hvd.size()} ranks in "
            f"{time.perf_counter() - start:.1f} s"
        )


if __name__ == "__main__":
    main()
