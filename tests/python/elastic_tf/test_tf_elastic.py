"""hora.tensorflow.elastic and hora.keras.elastic outside elastic mode: the states' commit,
restore and sync (rank 0's values on every rank), the Keras callbacks' batch and epoch
bookkeeping during model.fit, and run() turning a hora error raised inside a tf.function into
the hora.errors class."""

import numpy as np
import pytest
import tensorflow as tf

import hora.keras as hk
import hora.tensorflow as hvd
from hora._internal.keras import keras


def values(variables):
    return [np.array(v.numpy()) for v in variables]


def same_everywhere(arrays):
    gathered = hvd.allgather_object(arrays)
    return all(
        all(np.array_equal(a, b) for a, b in zip(g, gathered[0], strict=True)) for g in gathered
    )


def test_tensorflow_state():
    r = hvd.rank()
    w = tf.Variable(np.full(3, float(r), np.float32))
    b = tf.Variable(float(10 + r))
    state = hvd.elastic.TensorFlowState([w, b], step=r)
    state.sync()
    assert np.array_equal(w.numpy(), np.zeros(3)) and b.numpy() == 10.0 and state.step == 0
    w.assign_add(np.ones(3, np.float32))
    state.step = 1
    state.commit()
    w.assign(np.full(3, 7.0, np.float32))
    state.step = 2
    state.restore()
    assert np.array_equal(w.numpy(), np.ones(3)) and state.step == 1
    with pytest.raises(ValueError, match="variables"):
        hvd.elastic.TensorFlowState(None)


def compiled_model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=hk.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    return model


def data(n=24):
    rng = np.random.default_rng(hvd.rank())
    return rng.normal(size=(n, 4)).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32)


def test_keras_state_commit_restore_sync():
    model = compiled_model(100 + hvd.rank())
    x, y = data()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # builds the optimizer's variables
    state = hk.elastic.KerasState(model, epoch=hvd.rank())
    state.sync()
    synced = values(model.variables) + values(model.optimizer.variables)
    assert same_everywhere(synced) and state.epoch == 0
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    state.epoch = 5
    assert not all(
        np.array_equal(a, b) for a, b in zip(values(model.variables), synced, strict=False)
    )
    state.restore()
    assert all(
        np.array_equal(a, b)
        for a, b in zip(
            values(model.variables) + values(model.optimizer.variables), synced, strict=True
        )
    )
    assert state.epoch == 0


class Recorder(keras.callbacks.Callback):
    """Records (epoch, batch, state.epoch, state.batch, commits) after each batch."""

    def __init__(self, state, commits):
        super().__init__()
        self.state, self.commits, self.seen = state, commits, []

    def on_batch_end(self, batch, logs=None):
        self.seen.append((batch, self.state.batch, self.state.epoch, len(self.commits)))


def test_callbacks_bookkeeping():
    model = compiled_model(7)
    state = hk.elastic.KerasState(model, batch=0, epoch=2)  # two epochs done before this fit
    commits = []
    original_commit = state.commit

    def commit():
        commits.append((state.epoch, state.batch))
        original_commit()

    state.commit = commit
    recorder = Recorder(state, commits)
    callbacks = [
        hk.elastic.CommitStateCallback(state, batches_per_commit=2),
        hk.elastic.UpdateBatchStateCallback(state),
        hk.elastic.UpdateEpochStateCallback(state),
        recorder,
    ]
    x, y = data(24)
    model.fit(x, y, batch_size=4, epochs=2, callbacks=callbacks, verbose=0)  # 6 batches each
    # state.batch follows the batch; the commit runs before UpdateBatchStateCallback (Horovod's
    # order), so it saves the previous batch's number.
    assert [s[:2] for s in recorder.seen] == [(b, b) for b in range(6)] * 2
    assert [s[2] for s in recorder.seen] == [2] * 6 + [3] * 6
    # Every 2nd batch and at each epoch's end, before the later callbacks' on_epoch_end.
    assert commits == [(2, 0), (2, 2), (2, 4), (2, 5), (3, 0), (3, 2), (3, 4), (3, 5)]
    assert (state.epoch, state.batch) == (4, 0)
    with pytest.raises(ValueError, match="batches_per_commit"):
        hk.elastic.CommitStateCallback(state, batches_per_commit=0)


def test_batch_callback_shortens_the_announced_steps():
    state = hk.elastic.KerasState(compiled_model(3), batch=4, epoch=0)
    callback = hk.elastic.UpdateBatchStateCallback(state)
    callback.set_params({"steps": 10, "epochs": 1, "verbose": 0})
    callback.on_train_begin()
    callback.on_epoch_begin(0)
    assert callback.params["steps"] == 6
    callback.on_epoch_end(0)
    callback.on_epoch_begin(1)
    assert callback.params["steps"] == 10 and state.batch == 0


def test_run_raises_hora_errors_from_tf_function():
    """A hora error inside a tf.function reaches run() as TensorFlow's OpError; run turns it
    back into the hora.errors class, so elastic mode catches a peer failure there too."""

    @tf.function
    def mismatched():
        # Ranks disagree on the shape: a MismatchError from the engine, inside a graph.
        return hvd.allreduce(tf.zeros([hvd.rank() + 1]), name="elastic.mismatch")

    @hvd.elastic.run
    def train(state):
        return mismatched()

    if hvd.size() == 1:
        assert train(hvd.elastic.ObjectState(step=0)).shape == (1,)
        return
    with pytest.raises(hvd.MismatchError, match=r"elastic\.mismatch"):
        train(hvd.elastic.ObjectState(step=0))


def test_module_paths():
    import hora.tensorflow.keras as htk

    assert hvd.elastic.KerasState is hk.elastic.KerasState
    assert hvd.elastic.CommitStateCallback is hk.elastic.CommitStateCallback
    assert htk.elastic.run is hk.elastic.run is hvd.elastic.run
    with pytest.raises(AttributeError):
        hvd.elastic.NoSuchName  # noqa: B018
