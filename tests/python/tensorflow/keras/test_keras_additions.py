"""hora.keras's PartialDistributedOptimizer (local layers keep their own gradients) and
BestModelCheckpoint (rank 0 saves when the monitored metric improves), in model.fit, of the
Keras generation tf.keras resolves to."""

import os
import tempfile

import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import all_ranks_agree, relative_error, shard_batches

from hora._internal.keras import keras

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

ROWS = 6  # per rank


@pytest.fixture(scope="module")
def hk(hora_job):
    import hora.keras

    return hora.keras


def make_model():
    keras.utils.set_random_seed(21)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)]
    )


def rank_data(r, seed=0):
    rng = np.random.default_rng(seed + r)
    return rng.normal(size=(ROWS, 4)).astype(np.float32), rng.normal(size=(ROWS, 2)).astype(
        np.float32
    )


def local_gradients(model, x, y):
    """This rank's own gradients of the mean squared error (one step's)."""
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    return [g.numpy() for g in tape.gradient(loss, model.trainable_variables)]


@pytest.mark.parametrize("scale", [True, False])
def test_partial_distributed_optimizer(hk, scale):
    """One SGD step: the first layer moves by the ranks' average gradient, the local last
    layer by this rank's own (divided by size with scale_local_gradients)."""
    r, n = hk.rank(), hk.size()
    x, y = rank_data(r)
    model = make_model()
    before = [w.copy() for w in model.get_weights()]
    own = local_gradients(model, x, y)
    gathered = [
        hk.allgather(tf.constant(g[None]), name=f"pdo.{scale}.{i}") for i, g in enumerate(own)
    ]
    mean = [g.numpy().mean(axis=0) for g in gathered]

    lr = 0.5
    opt = hk.PartialDistributedOptimizer(
        keras.optimizers.SGD(lr), local_layers=model.layers[-1], scale_local_gradients=scale
    )
    model.compile(optimizer=opt, loss="mse")
    model.fit(x, y, batch_size=ROWS, epochs=1, shuffle=False, verbose=0)

    local_scale = 1.0 / n if scale else 1.0
    want = [before[0] - lr * mean[0], before[1] - lr * mean[1]]
    want += [before[2] - lr * own[2] * local_scale, before[3] - lr * own[3] * local_scale]
    for i, (got, w) in enumerate(zip(model.get_weights(), want, strict=True)):
        assert relative_error(got, w) <= 1e-5, (i, relative_error(got, w))
    all_ranks_agree(hk, model.layers[0].get_weights()[0], f"pdo.shared.{scale}")
    with pytest.raises(ValueError, match="not a Keras layer"):
        hk.PartialDistributedOptimizer(keras.optimizers.SGD(lr), local_layers=["dense"])


class _EpochWeights(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.weights, self.val_losses = [], []

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append([w.copy() for w in self.model.get_weights()])
        self.val_losses.append(logs["val_loss"])


def test_best_model_checkpoint(hk):
    """mode='max' on val_loss, which falls while training: the first epoch is the best, so
    the file holds its weights, written by rank 0 only."""
    r = hk.rank()
    x, y = rank_data(0, seed=5)  # the same data on every rank
    model = make_model()
    model.compile(optimizer=hk.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"best.rank{r}.keras")
        record = _EpochWeights()
        best = hk.callbacks.BestModelCheckpoint(monitor="val_loss", mode="max")
        best.filepath = path  # Horovod's estimators set it after construction
        with pytest.raises(ValueError, match="filepath"):
            hk.callbacks.BestModelCheckpoint(save_weights_only=True).on_train_begin()
        model.fit(
            x,
            y,
            batch_size=ROWS,
            epochs=3,
            validation_data=(x, y),
            shuffle=False,
            verbose=0,
            callbacks=[hk.callbacks.MetricAverageCallback(), record, best],
        )
        assert os.path.exists(path) == (r == 0)
        if r == 0:
            best_epoch = int(np.argmax(record.val_losses))
            assert best_epoch == 0, record.val_losses
            saved = keras.models.load_model(path, compile=False)
            for got, want in zip(saved.get_weights(), record.weights[best_epoch], strict=True):
                np.testing.assert_array_equal(got, want)


def test_keras_collectives_take_horovod_keras_signatures(hk):
    """horovod.keras's allreduce(value, name, average), allgather(value, name),
    broadcast(value, root_rank, name), reducescatter(value, name, op), against NumPy."""
    r, n = hk.rank(), hk.size()
    value = np.arange(2 * n, dtype=np.float32) + 10 * r
    ranks = [np.arange(2 * n, dtype=np.float32) + 10 * p for p in range(n)]
    np.testing.assert_allclose(hk.allreduce(value, "k.avg"), np.mean(ranks, axis=0), rtol=1e-6)
    np.testing.assert_allclose(
        hk.allreduce(value, "k.sum", average=False), np.sum(ranks, axis=0), rtol=1e-6
    )
    np.testing.assert_array_equal(hk.allgather(value, "k.gather"), np.concatenate(ranks))
    np.testing.assert_array_equal(hk.broadcast(value, n - 1, "k.bcast"), ranks[-1])
    np.testing.assert_allclose(
        hk.reducescatter(value, "k.rs", op=hk.Sum), np.sum(ranks, axis=0)[2 * r : 2 * r + 2]
    )
    assert issubclass(hk.elastic.KerasState, hk.elastic.TensorFlowKerasState)


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_embedding_fit_equals_one_process(hk, sparse_as_dense):
    """An Embedding's gradient is sparse (tf.IndexedSlices): allgathered, or densified with
    sparse_as_dense; either way N ranks at b rows each train as one process at N * b."""
    r, n = hk.rank(), hk.size()
    rng = np.random.default_rng(8)
    global_batch, steps = 12, 2
    x = rng.integers(0, 10, size=(global_batch * steps, 3)).astype(np.int32)
    y = rng.normal(size=(global_batch * steps, 2)).astype(np.float32)

    def embedding_model():
        keras.utils.set_random_seed(4)
        return keras.Sequential(
            [
                keras.Input((3,), dtype="int32"),
                keras.layers.Embedding(10, 4),
                keras.layers.Flatten(),
                keras.layers.Dense(2),
            ]
        )

    reference = embedding_model()
    reference.compile(optimizer=keras.optimizers.SGD(0.2), loss="mse")
    reference.fit(x, y, batch_size=global_batch, epochs=1, shuffle=False, verbose=0)

    model = embedding_model()
    opt = hk.DistributedOptimizer(keras.optimizers.SGD(0.2), sparse_as_dense=sparse_as_dense)
    model.compile(optimizer=opt, loss="mse")
    model.fit(
        shard_batches(x, global_batch, r, n),
        shard_batches(y, global_batch, r, n),
        batch_size=global_batch // n,
        epochs=1,
        shuffle=False,
        verbose=0,
    )
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        assert relative_error(got, want) <= 1e-5, relative_error(got, want)


def test_distributed_optimizer_takes_horovod_positional_order(hk):
    """Horovod 0.28's order: ..., sparse_as_dense, gradient_predivide_factor, op,
    backward_passes_per_step, average_aggregated_gradients, num_groups, groups; groups may be
    a count (hora fuses by size)."""
    opt = hk.DistributedOptimizer(
        keras.optimizers.SGD(0.1),
        None,
        "",
        "",
        hk.Compression.none,
        True,
        1.0,
        hk.Sum,
        3,
        True,
        0,
        2,
    )
    settings = opt._hora
    assert (settings.sparse_as_dense, settings.op, settings.k) == (True, hk.Sum, 3)
    assert settings.average_aggregated and settings.groups is None


def test_horovod_tensorflow_keras_path(hk):
    """``import horovod.tensorflow.keras as hvd`` becomes ``import hora.tensorflow.keras``:
    the same objects as hora.keras, its callbacks and elastic included."""
    import hora.tensorflow.keras as htk
    import hora.tensorflow.keras.callbacks as htk_callbacks

    assert htk.__all__ == hk.__all__
    for name in set(hk.__all__) - {"callbacks", "elastic"}:  # modules of their own path
        assert getattr(htk, name) is getattr(hk, name), name
    for name in hk.callbacks.__all__:
        assert getattr(htk_callbacks, name) is getattr(hk.callbacks, name), name
    for name in hk.elastic.__all__:
        assert getattr(htk.elastic, name) is getattr(hk.elastic, name), name
