"""horovod.tensorflow.keras.callbacks's path on hora: hora.keras.callbacks's classes."""

from __future__ import annotations

from hora.keras.callbacks import BestModelCheckpoint as BestModelCheckpoint
from hora.keras.callbacks import (
    BroadcastGlobalVariablesCallback as BroadcastGlobalVariablesCallback,
)
from hora.keras.callbacks import LearningRateScheduleCallback as LearningRateScheduleCallback
from hora.keras.callbacks import LearningRateWarmupCallback as LearningRateWarmupCallback
from hora.keras.callbacks import MetricAverageCallback as MetricAverageCallback
from hora.keras.callbacks import __all__ as __all__
