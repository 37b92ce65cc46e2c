"""The Keras generation hora.keras (and hora.tensorflow's Keras layer) build on: the one
``tf.keras`` resolves to, as Horovod's users expect. TensorFlow's own rule
(tensorflow/python/util/lazy_loader.py): ``TF_USE_LEGACY_KERAS`` set to 1/true/True routes
tf.keras to the tf_keras package (Keras 2); otherwise tf.keras is Keras 3. The choice is made
once, at import, for the whole process.
"""

from __future__ import annotations

import os
import types


def is_legacy() -> bool:
    """True when tf.keras is tf_keras (Keras 2), as TensorFlow decides it."""
    return os.environ.get("TF_USE_LEGACY_KERAS", None) in ("true", "True", "1")


def _load() -> types.ModuleType:
    if is_legacy():
        try:
            import tf_keras
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError(
                "TF_USE_LEGACY_KERAS is set, so hora.keras uses Keras 2, but the tf_keras "
                "package is not installed (pip install tf_keras)"
            ) from e
        return tf_keras
    import keras

    if not keras.__version__.startswith("3."):  # pragma: no cover - depends on the environment
        raise ImportError(
            f"hora.keras needs Keras 3 (or tf_keras with TF_USE_LEGACY_KERAS=1), found "
            f"keras {keras.__version__}"
        )
    if keras.backend.backend() != "tensorflow":  # pragma: no cover
        raise ImportError(
            f"hora.keras needs Keras's TensorFlow backend, found "
            f"{keras.backend.backend()} (KERAS_BACKEND=tensorflow)"
        )
    return keras


keras = _load()
LEGACY = is_legacy()

__all__ = ["LEGACY", "is_legacy", "keras"]
