"""Runs tests/python/gpu (hora.torch on CUDA tensors) with pytest, or exits 77 (a CTest skip)
with the reason when this process cannot use a CUDA device through torch. HORA_TEST_REQUIRE_GPU=1
(scripts/gpu_check.sh) turns that skip into a failure. Run it directly for one rank, or under
`horarun -np N` (every rank runs the same tests)."""

import os
import sys


def main():
    required = os.environ.get("HORA_TEST_REQUIRE_GPU") == "1"
    why = None
    try:
        import torch

        if not torch.cuda.is_available():
            why = f"torch {torch.__version__} sees no CUDA device"
    except ImportError as e:
        why = f"torch is not installed ({e})"
    if why is not None:
        print(f"{'FAILED' if required else 'SKIPPED'}: hora.torch on CUDA: {why}", flush=True)
        sys.exit(1 if required else 77)
    import pytest

    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", here, here]))


if __name__ == "__main__":
    main()
