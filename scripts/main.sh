#!/usr/bin/env bash
# Sets up the machine, builds hora and runs the main job: a PyTorch training script made
# data-parallel by Horovod's few lines (examples/pytorch/train.py, `import hora.torch as hvd`),
# launched on 2 ranks with horarun; then the allreduce bandwidth table, hora beside Gloo in the
# same run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${HORA_BUILD_DIR:-build}
HORARUN=$BUILD_DIR/launcher/horarun
PYTHON=$(bash scripts/setup_python.sh --print-python)
echo "== horarun -np 2 python examples/pytorch/train.py"
PYTHONPATH=$BUILD_DIR/python "$HORARUN" -np 2 "$PYTHON" examples/pytorch/train.py
echo
# --rounds 3: every column timed three times in turn per size, so that a noisy moment falls on
# all of them alike rather than on whichever column it hit.
echo "== horarun -np 2 $BUILD_DIR/benchmarks/hora-bench allreduce -b 8 -e 64M -f 8 -n 10 -w 2 --rounds 3 --compare hora,gloo"
"$HORARUN" -np 2 "$BUILD_DIR/benchmarks/hora-bench" allreduce -b 8 -e 64M -f 8 -n 10 -w 2 \
  --rounds 3 --compare hora,gloo
