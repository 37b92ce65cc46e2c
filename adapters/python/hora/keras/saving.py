"""hora.keras.load_model: a saved Keras model whose optimizer comes back wrapped."""

from __future__ import annotations

import keras

from hora.compression import Compression
from hora.keras.optimizer import _HoraSettings, _wrap_in_place


def load_model(
    filepath,
    custom_optimizers=None,
    custom_objects=None,
    compression=Compression.none,
    compile=True,
    **wrapper_options,
):
    """keras.models.load_model, then the compiled model's optimizer (with its restored
    state: slots, iterations, learning rate) is wrapped in place as a DistributedOptimizer
    with ``compression`` and ``wrapper_options`` (DistributedOptimizer's keywords), ready for
    ``model.fit`` to resume data-parallel training. ``custom_optimizers``: optimizer classes
    the file refers to that Keras does not know (added to custom_objects by name)."""
    objects = dict(custom_objects or {})
    for cls in custom_optimizers or []:
        objects[cls.__name__] = cls
    model = keras.models.load_model(filepath, custom_objects=objects or None, compile=compile)
    optimizer = getattr(model, "optimizer", None)
    if compile and optimizer is not None:
        settings = _HoraSettings(
            compression,
            wrapper_options.get("backward_passes_per_step", 1),
            wrapper_options.get("average_aggregated_gradients", False),
            wrapper_options.get("op"),
            wrapper_options.get("gradient_predivide_factor", 1.0),
            wrapper_options.get("sparse_as_dense", False),
            wrapper_options.get("groups"),
        )
        _wrap_in_place(optimizer, settings)
    return model
