"""What hora.torch's process-set tests share: the folders of the helpers they import on
sys.path (process_sets/helpers.py, the set shapes; torch/models.py, the seeded models and
data), and the job's size (each test then owns its own init)."""

import sys
from pathlib import Path

import pytest

import hora.torch as hvd

_HERE = Path(__file__).resolve().parent
for folder in ("process_sets", "torch"):
    path = str(_HERE.parent / folder)
    if path not in sys.path:
        sys.path.insert(0, path)


@pytest.fixture
def job_size():
    """The job's size, from an init and shutdown of its own."""
    hvd.init()
    n = hvd.size()
    hvd.shutdown()
    return n
