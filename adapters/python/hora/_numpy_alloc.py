"""NumPy arrays for hora's outputs: the default allocator of the framework-neutral API."""

from __future__ import annotations

import numpy as np

try:  # bfloat16 for NumPy comes from ml_dtypes (a dependency of JAX and TensorFlow)
    import ml_dtypes as _ml_dtypes

    _BFLOAT16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _BFLOAT16 = None

_DTYPES: dict[str, np.dtype] = {
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "bool": np.dtype(np.bool_),
}
if _BFLOAT16 is not None:
    _DTYPES["bfloat16"] = _BFLOAT16


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a hora dtype name; ValueError when NumPy has none."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(
            f"hora dtype {name!r} has no NumPy equivalent here"
            + (" (bfloat16 needs the ml_dtypes package)" if name == "bfloat16" else "")
        ) from None


def allocate(dtype_name: str, shape: tuple[int, ...]) -> np.ndarray:
    """The default OutputAllocator: a new C-contiguous NumPy array."""
    return np.empty(shape, dtype=numpy_dtype(dtype_name))
