"""horovod.tensorflow.keras.elastic's path on hora: each name raises UnimplementedError
(hora/_internal/elastic.py)."""

from __future__ import annotations

from hora.tensorflow.elastic import __getattr__  # noqa: F401 - the module's attribute hook
