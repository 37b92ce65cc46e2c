"""Puts the folders of the helpers these tests share on sys.path (before the test modules import
them): process_sets/helpers.py (the set shapes) and torch/models.py (the seeded models)."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for folder in ("process_sets", "torch"):
    path = str(_HERE.parent / folder)
    if path not in sys.path:
        sys.path.insert(0, path)
