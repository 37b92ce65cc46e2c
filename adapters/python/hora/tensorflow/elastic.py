"""horovod.tensorflow.elastic's names on hora: each raises UnimplementedError with the reason
(hora/_internal/elastic.py)."""

from __future__ import annotations

from typing import NoReturn

from hora._internal.elastic import missing


def __getattr__(name: str) -> NoReturn:
    missing(__name__, name)
