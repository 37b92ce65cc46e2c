"""horovod.tensorflow.keras's path on hora: the same API as hora.keras (Horovod, too, serves
horovod.keras and horovod.tensorflow.keras from one implementation), so
``import horovod.tensorflow.keras as hvd`` becomes ``import hora.tensorflow.keras as hvd``."""

from __future__ import annotations

from hora.keras import *
from hora.keras import __all__ as __all__
from hora.tensorflow.keras import callbacks as callbacks
from hora.tensorflow.keras import elastic as elastic
