#!/usr/bin/env bash
# examples/tensorflow/ train under horarun: keras_fit.py (model.fit) must print its epochs and
# reach 70% held-out accuracy after 2 short epochs; custom_loop.py (DistributedGradientTape in
# a tf.function) must bring the held-out loss under 0.5.
# Usage: examples_check.sh HORARUN PYTHON EXAMPLES_DIR NP
set -euo pipefail
horarun=$1 python=$2 dir=$3 np=$4
out=$("$horarun" -np "$np" "$python" "$dir/keras_fit.py" --epochs 2 --samples 4096 2>&1) || {
  echo "$out"; echo "FAIL: keras_fit.py exited non-zero"; exit 1; }
echo "$out" | grep stdout
grep -q "epoch 2: loss" <<<"$out" || { echo "FAIL: keras_fit.py printed no epoch 2 line"; exit 1; }
acc=$(sed -n 's/.*held-out accuracy \([0-9.]*\)%, trained on '"$np"' ranks.*/\1/p' <<<"$out")
[[ -n $acc ]] || { echo "FAIL: keras_fit.py printed no summary for $np ranks"; exit 1; }
awk -v a="$acc" 'BEGIN { exit !(a >= 70) }' || { echo "FAIL: accuracy $acc% < 70%"; exit 1; }
out=$("$horarun" -np "$np" "$python" "$dir/custom_loop.py" --steps 200 2>&1) || {
  echo "$out"; echo "FAIL: custom_loop.py exited non-zero"; exit 1; }
echo "$out" | grep stdout
loss=$(sed -n 's/.*held-out loss \([0-9.]*\), trained on '"$np"' ranks.*/\1/p' <<<"$out")
[[ -n $loss ]] || { echo "FAIL: custom_loop.py printed no summary for $np ranks"; exit 1; }
awk -v l="$loss" 'BEGIN { exit !(l < 0.5) }' || { echo "FAIL: held-out loss $loss >= 0.5"; exit 1; }
echo "PASS: $np ranks, keras_fit.py $acc%, custom_loop.py loss $loss"
