"""horovod.keras.elastic's path on hora: hora.tensorflow.elastic's, each name raising
UnimplementedError with the reason (hora/_internal/elastic.py)."""

from __future__ import annotations

from hora.tensorflow.elastic import __getattr__  # noqa: F401 - the module's attribute hook
