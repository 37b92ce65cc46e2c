"""horovod.tensorflow.keras.elastic's path on hora: hora.keras.elastic."""

from __future__ import annotations

from hora.keras.elastic import *  # noqa: F403 - the same names
from hora.keras.elastic import __all__ as __all__
