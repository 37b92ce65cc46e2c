"""hora: data-parallel training in a few lines, on any framework.

The framework-neutral API (NumPy arrays or any DLPack tensor); hora.torch, hora.tensorflow
and hora.keras build Horovod's APIs on it::

    import hora
    hora.init()
    avg = hora.allreduce(np.ones(4, np.float32), name="x")   # the average over ranks
    hora.shutdown()
"""

from __future__ import annotations

from hora import _core
from hora._internal.api import *
from hora.ops import *

GradientReducer = _core.GradientReducer
