"""What hora answers for Horovod's elastic API (horovod.tensorflow.elastic,
horovod.tensorflow.keras.elastic): every name raises UnimplementedError with the reason."""

from __future__ import annotations

from typing import NoReturn

from hora import errors

REASON = (
    "hora has no elastic mode: a job's ranks are fixed from init to shutdown (horarun starts "
    "them once, and a rank that fails or leaves ends the collectives of the others with "
    "RemoteError); restart the job from a checkpoint instead"
)


def missing(module: str, name: str) -> NoReturn:
    """Raises for ``module.name``: AttributeError for dunders (import machinery probes them),
    otherwise UnimplementedError naming the reason."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise errors.UnimplementedError(f"{module}.{name}: {REASON}")
