"""hora.keras: model.fit data-parallel equals one process at the global batch; the
callbacks; backward_passes_per_step; load_model. Of the Keras generation tf.keras resolves
to: CTest runs this folder with Keras 3 and again with TF_USE_LEGACY_KERAS=1 (tf_keras)."""

import os
import tempfile

import numpy as np
import pytest
import tensorflow as tf
from tf_helpers import all_ranks_agree, relative_error, shard_batches

import hora
from hora._internal.keras import LEGACY, keras

# Keras 3.15 converts tensors with np.array(copy=False), which NumPy 2 warns about.
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

GLOBAL_BATCH = 24  # divisible by 1, 2, 3 and 4 ranks
STEPS = 3


@pytest.fixture(scope="module")
def hk(hora_job):
    import hora.keras

    return hora.keras


def data(seed=0, rows=GLOBAL_BATCH * STEPS):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1).astype(np.int64)
    return x, y


def make_model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(3)]
    )


def fit_shards(hk, model, x, y, epochs=1, callbacks=None):
    """model.fit on this rank's shard of every global batch of (x, y), in order."""
    r, n = hk.rank(), hk.size()
    return model.fit(
        shard_batches(x, GLOBAL_BATCH, r, n),
        shard_batches(y, GLOBAL_BATCH, r, n),
        batch_size=GLOBAL_BATCH // n,
        epochs=epochs,
        shuffle=False,
        verbose=0,
        callbacks=callbacks,
    )


LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
OPTIMIZERS = {
    "sgd": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "adam": lambda: keras.optimizers.Adam(0.01),
}
if LEGACY:  # tf_keras's optimizers of before Keras 2.11 (OptimizerV2), wrapped alike
    OPTIMIZERS["legacy-sgd"] = lambda: keras.optimizers.legacy.SGD(0.1, momentum=0.9)
    OPTIMIZERS["legacy-adam"] = lambda: keras.optimizers.legacy.Adam(0.01)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fit_at_n_ranks_equals_one_process_at_global_batch(hk, name):
    x, y = data()
    reference = make_model(7)
    reference.compile(optimizer=OPTIMIZERS[name](), loss=LOSS)
    reference.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)

    model = make_model(7)
    opt = hk.DistributedOptimizer(OPTIMIZERS[name]())
    assert isinstance(opt, type(OPTIMIZERS[name]()))
    model.compile(optimizer=opt, loss=LOSS)
    fit_shards(hk, model, x, y, epochs=1)
    assert int(model.optimizer.iterations.numpy()) == STEPS
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        assert relative_error(got, want) <= 1e-5, (name, relative_error(got, want))
    all_ranks_agree(hk, np.concatenate([w.ravel() for w in model.get_weights()]), f"fit.{name}")


def test_fit_with_callbacks_from_other_weights_equals_one_process(hk):
    """Every rank starts elsewhere; BroadcastGlobalVariablesCallback gives them rank 0's
    weights (seed 7, the reference's), so training equals one process at the global batch,
    and MetricAverageCallback makes the logged loss the same on every rank."""
    r = hk.rank()
    x, y = data(4)
    reference = make_model(7)
    reference.compile(optimizer=OPTIMIZERS["adam"](), loss=LOSS)
    reference.fit(x, y, batch_size=GLOBAL_BATCH, epochs=2, shuffle=False, verbose=0)

    model = make_model(7 + r)
    model.compile(optimizer=hk.DistributedOptimizer(OPTIMIZERS["adam"]()), loss=LOSS)
    history = fit_shards(
        hk,
        model,
        x,
        y,
        epochs=2,
        callbacks=[
            hk.callbacks.BroadcastGlobalVariablesCallback(0),
            hk.callbacks.MetricAverageCallback(),
        ],
    )
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        assert relative_error(got, want) <= 1e-5, relative_error(got, want)
    all_ranks_agree(hk, np.array(history.history["loss"]), "fit.callbacks.loss")


def test_backward_passes_per_step(hk):
    """k = 2 passes of b rows per rank, averaged: one SGD step per 2 * N * b rows."""
    r, n = hk.rank(), hk.size()
    x, y = data(1, rows=2 * GLOBAL_BATCH * STEPS)
    reference = make_model(3)
    reference.compile(optimizer=keras.optimizers.SGD(0.5), loss=LOSS)
    reference.fit(x, y, batch_size=2 * GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)

    # Global batch k (2B rows) is 2N chunks of b; rank r takes chunks r (pass 0) and N + r.
    b = GLOBAL_BATCH // n
    rows = np.concatenate(
        [
            np.arange(k + j * GLOBAL_BATCH + r * b, k + j * GLOBAL_BATCH + (r + 1) * b)
            for k in range(0, len(x), 2 * GLOBAL_BATCH)
            for j in range(2)
        ]
    )
    model = make_model(3)
    model.compile(
        optimizer=hk.DistributedOptimizer(
            keras.optimizers.SGD(0.5), backward_passes_per_step=2, average_aggregated_gradients=True
        ),
        loss=LOSS,
    )
    model.fit(x[rows], y[rows], batch_size=b, epochs=1, shuffle=False, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == STEPS
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        assert relative_error(got, want) <= 1e-5, relative_error(got, want)


class _Record(keras.callbacks.Callback):
    """Records weights at train begin, the learning rate at each batch, raw epoch logs."""

    def __init__(self):
        super().__init__()
        self.initial, self.lrs, self.logs = None, [], []

    def on_train_begin(self, logs=None):
        self.initial = [w.copy() for w in self.model.get_weights()]

    def on_train_batch_begin(self, batch, logs=None):
        self.lrs.append(float(tf.convert_to_tensor(self.model.optimizer.learning_rate)))

    def on_epoch_end(self, epoch, logs=None):
        self.logs.append(dict(logs))


def test_callbacks(hk):
    r, n = hk.rank(), hk.size()
    x, y = data(2)
    model = make_model(100 + r)  # every rank starts elsewhere
    mine = [w.copy() for w in model.get_weights()]
    root = [
        hk.broadcast(tf.constant(w), 0, name=f"cb.root.{i}").numpy() for i, w in enumerate(mine)
    ]
    model.compile(
        optimizer=hk.DistributedOptimizer(keras.optimizers.SGD(0.1)),
        loss=LOSS,
        metrics=["accuracy"],
    )
    record, raw, averaged = _Record(), _Record(), _Record()
    warmup = hk.callbacks.LearningRateWarmupCallback(initial_lr=0.4, warmup_epochs=2)
    fit_shards(
        hk,
        model,
        x,
        y,
        epochs=2,
        callbacks=[
            hk.callbacks.BroadcastGlobalVariablesCallback(0),
            record,
            warmup,
            raw,
            hk.callbacks.MetricAverageCallback(),
            averaged,
        ],
    )

    # Every rank started from rank 0's weights.
    for got, want in zip(record.initial, root, strict=True):
        np.testing.assert_array_equal(got, want)
    # Warmup: lr = 0.4 / n * (epoch * (n - 1) / 2 + 1), epoch fractional per batch.
    want = [0.4 / n * ((e + b / STEPS) * (n - 1) / 2 + 1) for e in range(2) for b in range(STEPS)]
    np.testing.assert_allclose(raw.lrs, want, rtol=1e-6)
    # Averaged metrics: the mean of the ranks' own values, the same on every rank.
    assert len(raw.logs) == len(averaged.logs) == 2
    for epoch_raw, epoch_avg in zip(raw.logs, averaged.logs, strict=True):
        for key in ("loss", "accuracy"):
            values = hk.allgather(
                tf.constant([epoch_raw[key]], tf.float64), name=f"cb.raw.{key}"
            ).numpy()
            assert epoch_avg[key] == pytest.approx(values.mean(), rel=1e-9)
            all_ranks_agree(hk, np.array([epoch_avg[key]]), f"cb.avg.{key}")

    # Schedule: lr = 0.2 * 0.5 ** epoch from epoch 1 on (staircase), untouched in epoch 0.
    model.optimizer.learning_rate = 0.3
    record = _Record()
    fit_shards(
        hk,
        model,
        x,
        y,
        epochs=2,
        callbacks=[
            hk.callbacks.LearningRateScheduleCallback(
                initial_lr=0.2, multiplier=lambda epoch: 0.5**epoch, start_epoch=1
            ),
            record,
        ],
    )
    np.testing.assert_allclose(record.lrs, [0.3] * STEPS + [0.1] * STEPS, rtol=1e-6)


class _Momentum(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.values = []

    def on_train_batch_begin(self, batch, logs=None):
        self.values.append(float(tf.convert_to_tensor(self.model.optimizer.momentum)))


def test_momentum_correction(hk):
    """Horovod's momentum correction: for the batch after the rate halves, momentum is
    scaled by new_lr / old_lr = 0.5, then restored. It applies where momentum is read at run
    time (tf_keras's legacy SGD); Keras 3's SGD bakes momentum into the compiled step, so
    there it stays 0.9."""
    x, y = data(5)
    model = make_model(2)
    sgd = keras.optimizers.legacy.SGD if LEGACY else keras.optimizers.SGD
    model.compile(optimizer=hk.DistributedOptimizer(sgd(0.2, momentum=0.9)), loss=LOSS)
    momentum = _Momentum()
    fit_shards(
        hk,
        model,
        x,
        y,
        epochs=2,
        callbacks=[
            hk.callbacks.LearningRateScheduleCallback(
                initial_lr=0.2, multiplier=lambda epoch: 0.5**epoch
            ),
            momentum,
        ],
    )
    corrected = 0.45 if LEGACY else 0.9
    want = [0.9] * STEPS + [corrected] + [0.9] * (STEPS - 1)
    np.testing.assert_allclose(momentum.values, want, rtol=1e-6)
    assert float(tf.convert_to_tensor(model.optimizer.momentum)) == pytest.approx(0.9)


def test_load_model_rewraps_the_optimizer(hk):
    r = hk.rank()
    x, y = data(3)
    model = make_model(11)
    model.compile(optimizer=hk.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss=LOSS)
    fit_shards(hk, model, x, y)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"model.rank{r}.keras")
        model.save(path)
        loaded = hk.load_model(path)
    assert isinstance(loaded.optimizer, keras.optimizers.Adam)
    assert hasattr(loaded.optimizer, "_hora")
    assert int(loaded.optimizer.iterations.numpy()) == STEPS
    for got, want in zip(loaded.optimizer.variables, model.optimizer.variables, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    fit_shards(hk, loaded, x, y)
    fit_shards(hk, model, x, y)
    for got, want in zip(loaded.get_weights(), model.get_weights(), strict=True):
        assert relative_error(got, want) <= 1e-6
    all_ranks_agree(hk, np.concatenate([w.ravel() for w in loaded.get_weights()]), "loaded")


def test_fit_stays_unchanged_at_one_rank_api(hk):
    """The wrapper keeps the optimizer's config (what model.save writes)."""
    opt = hk.DistributedOptimizer(keras.optimizers.Adam(0.003, beta_1=0.8))
    assert opt.get_config()["beta_1"] == pytest.approx(0.8)
    assert type(opt).__name__ == "Adam"
    assert hora.size() == hk.size()
