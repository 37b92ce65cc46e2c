"""An elastic hora.keras job for tests/python/elastic_launch: model.fit with KerasState and
the three elastic callbacks, each rank fitting its shard of a fixed dataset; worker
--fault-worker SIGKILLs itself before its --fault-batch-th batch (generation 0 only).

Creates OUT/started-<id>-<pid> at start and writes OUT/worker<id>.json at the end: pid, rank,
size, generation, state.epoch, the final weights and the (epoch, size, generation) of every
epoch this process finished.
"""

import argparse
import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import job_files
import numpy as np
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--fault-worker", type=int, default=1)
    parser.add_argument("--fault-batch", type=int, default=6)
    args = parser.parse_args()

    worker = job_files.worker_id()
    job_files.mark_started(args.out)
    import hora.keras as hvd
    from hora import _core
    from hora._internal.keras import keras

    hvd.init()
    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.02)), loss="mse")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(48, 6)).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True))
    state = hvd.elastic.KerasState(model, batch=0, epoch=0)
    epochs_done = []
    batches_seen = [0]

    class Fault(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            batches_seen[0] += 1
            if _core.elastic_generation() == 0 and worker == args.fault_worker:
                if batches_seen[0] == args.fault_batch:
                    os.kill(os.getpid(), signal.SIGKILL)

        def on_epoch_end(self, epoch, logs=None):
            epochs_done.append((state.epoch, hvd.size(), _core.elastic_generation()))

    callbacks = [
        hvd.elastic.CommitStateCallback(state),
        hvd.elastic.UpdateBatchStateCallback(state),
        hvd.elastic.UpdateEpochStateCallback(state),
        Fault(),
    ]

    @hvd.elastic.run
    def train(state):
        r, n = hvd.rank(), hvd.size()
        model.fit(
            x[r::n],
            y[r::n],
            batch_size=4,
            epochs=args.epochs - state.epoch,
            callbacks=callbacks,
            verbose=0,
        )

    train(state)
    job_files.write_result(
        args.out,
        {
            "epoch": state.epoch,
            "weights": [w.tolist() for w in model.get_weights()],
            "epochs": epochs_done,
        },
    )
    hvd.shutdown()


if __name__ == "__main__":
    main()
