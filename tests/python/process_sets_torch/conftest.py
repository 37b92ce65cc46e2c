"""What hora.torch's process-set tests share: the folders of the helpers they import on
sys.path (process_sets/helpers.py, the set shapes; torch/models.py, the seeded models and
data). Each test owns its init; the job's size is ../conftest.py's job_size."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for folder in ("process_sets", "torch"):
    path = str(_HERE.parent / folder)
    if path not in sys.path:
        sys.path.insert(0, path)
