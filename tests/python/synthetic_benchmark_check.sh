#!/usr/bin/env bash
# examples/pytorch/synthetic_benchmark.py runs: a short run under `horarun -np N`, and its
# --no-hora baseline in one process, must exit 0 and print the total img/sec line.
# Usage: synthetic_benchmark_check.sh HORARUN PYTHON EXAMPLE NP
set -euo pipefail
horarun=$1 python=$2 example=$3 np=$4
short=(--model mlp --batch-size 16 --num-warmup-batches 1 --num-batches-per-iter 2 --num-iters 2)
out=$("$horarun" -np "$np" "$python" "$example" "${short[@]}" 2>&1) || {
  echo "$out"; echo "FAIL: the benchmark exited non-zero under horarun -np $np"; exit 1; }
echo "$out"
grep -q "ranks: $np, device: " <<<"$out" || { echo "FAIL: no header line for $np ranks"; exit 1; }
grep -q "Total img/sec on $np rank(s): " <<<"$out" || { echo "FAIL: no total line"; exit 1; }
out=$("$python" "$example" "${short[@]}" --no-hora 2>&1) || {
  echo "$out"; echo "FAIL: the --no-hora baseline exited non-zero"; exit 1; }
echo "$out"
grep -q ", no hora" <<<"$out" || { echo "FAIL: the baseline does not say it ran without hora"; exit 1; }
grep -q "Total img/sec on 1 rank(s): " <<<"$out" || { echo "FAIL: no baseline total line"; exit 1; }
echo "PASS: $np ranks and the one-process baseline"
