#!/usr/bin/env bash
# Sets up the machine, builds hora and runs the main job: the reference trainer on 2 ranks
# (data-parallel through hora::DistributedOptimizer), then the allreduce bandwidth table,
# hora beside Gloo in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${HORA_BUILD_DIR:-build}
HORARUN=$BUILD_DIR/launcher/horarun
echo "== horarun -np 2 $BUILD_DIR/examples/trainer/train_mlp"
"$HORARUN" -np 2 "$BUILD_DIR/examples/trainer/train_mlp"
echo
echo "== horarun -np 2 $BUILD_DIR/benchmarks/hora-bench allreduce -b 8 -e 64M -f 8 --compare hora,gloo"
"$HORARUN" -np 2 "$BUILD_DIR/benchmarks/hora-bench" allreduce -b 8 -e 64M -f 8 -n 10 -w 2 \
  --compare hora,gloo
