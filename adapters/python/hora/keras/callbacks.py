"""Horovod's Keras callbacks (horovod.keras.callbacks), callbacks of the Keras generation
tf.keras resolves to (Keras 3, or tf_keras with TF_USE_LEGACY_KERAS=1: hora/_internal/keras.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

import hora
from hora._internal.keras import LEGACY, keras
from hora.process_sets import ProcessSet, global_process_set, set_id
from hora.tensorflow.functions import broadcast_variables


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """At the start of training, overwrites every rank's model variables and optimizer
    variables with root_rank's, so every rank starts from the same state (whatever the
    random initialisation or checkpoint each rank had). Put it first among the callbacks.
    With ``process_set`` (hora's addition), only the set's members take it (root_rank a global
    rank in the set).

    Departure from Horovod: it broadcasts in on_train_begin, before the first step, not after
    the first batch. An optimizer whose variables do not exist yet then (tf_keras builds them
    in the first step) has them broadcast after the first batch as well."""

    def __init__(
        self, root_rank: int = 0, device: str = "", process_set: ProcessSet = global_process_set
    ) -> None:
        super().__init__()
        set_id(process_set)  # a ValueError now for an unregistered set
        self.process_set = process_set
        self.root_rank = root_rank
        self.broadcast_done = False
        self._optimizer_pending = False

    def _optimizer_variables(self) -> list[Any]:
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not getattr(optimizer, "built", True):
            return []
        variables = optimizer.variables  # a method on tf_keras's legacy OptimizerV2
        return list(variables() if callable(variables) else variables)

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self.broadcast_done:
            return
        # Keras 3 builds the optimizer before training; tf_keras in the first step.
        self._optimizer_pending = LEGACY
        optimizer_variables = [] if LEGACY else self._optimizer_variables()
        broadcast_variables(
            list(self.model.variables) + optimizer_variables, self.root_rank, self.process_set
        )
        self.broadcast_done = True

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._optimizer_pending:
            self._optimizer_pending = False
            broadcast_variables(self._optimizer_variables(), self.root_rank, self.process_set)


class MetricAverageCallback(keras.callbacks.Callback):
    """At the end of each epoch, replaces every metric in the logs with its average over
    the ranks (of ``process_set``, hora's addition), so that every rank (and the callbacks
    after this one: checkpoints, early stopping, the progress bar) sees the same values. Put
    it before those callbacks."""

    def __init__(self, device: str = "", process_set: ProcessSet = global_process_set) -> None:
        super().__init__()
        set_id(process_set)  # a ValueError now for an unregistered set
        self.process_set = process_set

    def _average(self, logs: dict[str, Any] | None) -> None:
        if not logs or (self.process_set.size() or 1) == 1:
            return
        keys = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        values = np.array([float(logs[k]) for k in keys], dtype=np.float64)
        averaged = hora.allreduce(values, name="keras.metric_average", process_set=self.process_set)
        for k, v in zip(keys, averaged.tolist(), strict=True):
            logs[k] = v

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._average(logs)


def _set_learning_rate(optimizer: keras.optimizers.Optimizer, value: float) -> None:
    optimizer.learning_rate = value


def _learning_rate(optimizer: keras.optimizers.Optimizer) -> float:
    return float(np.asarray(tf.convert_to_tensor(optimizer.learning_rate)))


def _has_variable_momentum(optimizer: keras.optimizers.Optimizer) -> bool:
    """Whether the optimizer reads its momentum at run time: tf_keras's legacy OptimizerV2
    keeps it as a hyperparameter variable; Keras 3's and tf_keras's newer optimizers bake
    it into the compiled step as a Python number."""
    return "momentum" in (getattr(optimizer, "_hyper", None) or {})


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` for epochs in
    [start_epoch, end_epoch). ``multiplier``: a number or a function of the epoch (a float
    when ``staircase=False``: the epoch plus the fraction of it done, updated every batch).
    ``initial_lr`` defaults to the optimizer's learning rate when training starts.

    ``momentum_correction`` (Goyal et al., as Horovod): for the one batch after the rate
    changes, momentum is scaled by new_lr / old_lr, then restored. It applies to optimizers
    that read momentum at run time (tf_keras's legacy OptimizerV2, e.g.
    ``tf_keras.optimizers.legacy.SGD``); Keras 3's and tf_keras's newer optimizers keep momentum
    as a constant of the compiled step, so there it is accepted and has no effect."""

    def __init__(
        self,
        initial_lr: float | None = None,
        multiplier: float | Callable[[float], float] = 1.0,
        start_epoch: int = 0,
        end_epoch: int | None = None,
        staircase: bool = True,
        momentum_correction: bool = True,
        steps_per_epoch: int | None = None,
    ) -> None:
        super().__init__()
        self.initial_lr = initial_lr
        self.multiplier = multiplier if callable(multiplier) else (lambda epoch: multiplier)
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.steps_per_epoch = steps_per_epoch
        self.momentum_correction = momentum_correction
        self.restore_momentum: float | None = None
        self.current_epoch = 0

    def _active(self, epoch: int) -> bool:
        return epoch >= self.start_epoch and (self.end_epoch is None or epoch < self.end_epoch)

    def _adjust(self, epoch: float) -> None:
        assert self.initial_lr is not None, "set by on_train_begin"
        if not self._active(int(epoch)):
            return
        optimizer = self.model.optimizer
        old_lr = _learning_rate(optimizer)
        new_lr = self.initial_lr * float(self.multiplier(epoch))
        _set_learning_rate(optimizer, new_lr)
        if self.momentum_correction and _has_variable_momentum(optimizer) and old_lr != 0:
            if self.restore_momentum is None:  # not already corrected in this batch
                self.restore_momentum = float(np.asarray(tf.convert_to_tensor(optimizer.momentum)))
            optimizer.momentum = self.restore_momentum * new_lr / old_lr

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.restore_momentum is not None:
            self.model.optimizer.momentum = self.restore_momentum
            self.restore_momentum = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self.initial_lr is None:
            self.initial_lr = _learning_rate(self.model.optimizer)
        if self.steps_per_epoch is None:
            self.steps_per_epoch = (self.params or {}).get("steps")

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.current_epoch = epoch
        if self.staircase:
            self._adjust(epoch)

    def on_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.staircase:
            return
        if not self.steps_per_epoch:
            raise ValueError(
                "LearningRateScheduleCallback(staircase=False) needs "
                "steps_per_epoch (fit did not say how many steps an epoch has)"
            )
        self._adjust(self.current_epoch + batch / self.steps_per_epoch)

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.on_batch_begin(batch, logs)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if logs is not None:
            logs["lr"] = _learning_rate(self.model.optimizer)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Horovod's gradual warmup (Goyal et al.): over ``warmup_epochs`` the learning rate
    grows per batch from ``initial_lr / size`` to ``initial_lr`` (the rate scaled for the
    job's size), ``lr = initial_lr / size * (epoch * (size - 1) / warmup_epochs + 1)``."""

    def __init__(
        self,
        initial_lr: float | None = None,
        warmup_epochs: int = 5,
        momentum_correction: bool = True,
        steps_per_epoch: int | None = None,
        verbose: int = 0,
    ) -> None:
        def multiplier(epoch: float) -> float:
            size = hora.size()
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(
            initial_lr=initial_lr,
            multiplier=multiplier,
            start_epoch=0,
            end_epoch=warmup_epochs,
            staircase=False,
            momentum_correction=momentum_correction,
            steps_per_epoch=steps_per_epoch,
        )
        self.warmup_epochs = warmup_epochs
        self.verbose = verbose

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        super().on_epoch_end(epoch, logs)
        if epoch == self.warmup_epochs - 1 and self.verbose > 0 and hora.rank() == 0:
            print(
                f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to "
                f"{_learning_rate(self.model.optimizer):g}."
            )


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """Horovod's: keras.callbacks.ModelCheckpoint with save_best_only=True, saving the whole
    model (or its weights) to ``filepath`` when the ``monitor``ed metric improves, on rank 0
    only (every rank tracks the best value; put MetricAverageCallback before it so they agree).
    With ``process_set`` (hora's addition, for a set training a model of its own) the set's
    first rank saves instead.
    Horovod's estimators set ``filepath`` later, so it may be given after construction
    (``callback.filepath = ...``) but must be set before training."""

    def __init__(
        self,
        monitor: str = "val_loss",
        verbose: int = 0,
        mode: str = "auto",
        save_freq: str | int = "epoch",
        filepath: str | os.PathLike[str] | None = None,
        save_weights_only: bool = False,
        process_set: ProcessSet = global_process_set,
    ) -> None:
        set_id(process_set)  # a ValueError now for an unregistered set
        placeholder = "unset.weights.h5" if save_weights_only else "unset.keras"
        super().__init__(
            filepath=placeholder if filepath is None else filepath,
            monitor=monitor,
            verbose=verbose,
            save_best_only=True,
            save_weights_only=save_weights_only,
            mode=mode,
            save_freq=save_freq,
        )
        self._filepath_set = filepath is not None
        self._saver = (process_set.ranks or [0])[0]

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "filepath":
            super().__setattr__("_filepath_set", True)

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if not getattr(self, "_filepath_set", False):
            raise ValueError("BestModelCheckpoint: set filepath before training")
        super().on_train_begin(logs)

    def _save_model(self, *args: Any, **kwargs: Any) -> None:
        if hora.rank() == getattr(self, "_saver", 0):
            super()._save_model(*args, **kwargs)


__all__ = [
    "BestModelCheckpoint",
    "BroadcastGlobalVariablesCallback",
    "LearningRateScheduleCallback",
    "LearningRateWarmupCallback",
    "MetricAverageCallback",
]
