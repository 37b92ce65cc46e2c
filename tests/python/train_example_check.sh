#!/usr/bin/env bash
# The main job's PyTorch example trains: `horarun -np N python examples/pytorch/train.py` for a
# short run must exit 0, print every epoch's line and the summary, and reach 80% held-out
# accuracy after 2 epochs.
# Usage: train_example_check.sh HORARUN PYTHON EXAMPLE NP
set -euo pipefail
horarun=$1 python=$2 example=$3 np=$4
out=$("$horarun" -np "$np" "$python" "$example" --epochs 2 --samples 8192 2>&1) || {
  echo "$out"; echo "FAIL: the example exited non-zero"; exit 1; }
echo "$out"
grep -q "epoch 1: loss" <<<"$out" || { echo "FAIL: no epoch 1 line"; exit 1; }
acc=$(sed -n 's/.*epoch 2: loss [0-9.]*, held-out accuracy \([0-9.]*\)%.*/\1/p' <<<"$out")
[[ -n $acc ]] || { echo "FAIL: no epoch 2 line"; exit 1; }
grep -q "trained on $np ranks in" <<<"$out" || { echo "FAIL: no summary line"; exit 1; }
awk -v a="$acc" 'BEGIN { exit !(a >= 80) }' || { echo "FAIL: accuracy $acc% < 80%"; exit 1; }
echo "PASS: $np ranks, held-out accuracy $acc%"
