#!/usr/bin/env bash
# What Python adds on top of the C++ engine, measured in one run at 2 ranks (issue targets: at
# most 10 us added per small allreduce, a 200 x 16 KiB gradient step within 1.2x of C++):
#   small allreduce: allreduce_async + synchronize of 4 bytes, per call, C++ vs Python
#     (hora._core directly, and hora.allreduce_ with its argument handling);
#   reducer step: 200 gradients of 16 KiB through the GradientReducer (gradient_ready each,
#     then synchronize), C++ vs the Python binding, and vs hora.torch's DistributedOptimizer
#     (each gradient through the hook it registered, then synchronize; where torch exists).
# Usage: benchmarks/python/binding_overhead.sh [BUILD_DIR] [PYTHON]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
python=${2:-$(bash "$here/../../scripts/setup_python.sh" --print-python)}
horarun="$build/launcher/horarun"
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
cpp=$("$horarun" -np 2 "$build/benchmarks/binding_overhead_cpp" | sed -n 's/^\[0\]<stdout>: //p')
py=$(PYTHONPATH="$build/python" "$horarun" -np 2 "$python" "$here/binding_overhead.py" |
  sed -n 's/^\[0\]<stdout>: //p')
field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" <<<"$2"; }
echo "CPU: $cpu, 2 ranks, builtin backend"
echo "$cpp"
echo "$py"
awk -v c="$(field small_allreduce_us "$cpp")" -v p="$(field small_allreduce_us "$py")" \
    -v a="$(field api_allreduce_us "$py")" -v cs="$(field reducer_step_us "$cpp")" \
    -v ps="$(field reducer_step_us "$py")" -v ts="$(field torch_step_us "$py")" 'BEGIN {
  printf "small allreduce: C++ %.2f us, Python (_core) %.2f us: +%.2f us; hora.allreduce_ %.2f us: +%.2f us\n", c, p, p - c, a, a - c
  printf "reducer step (200 x 16 KiB): C++ %.0f us, Python %.0f us: %.2fx", cs, ps, ps / cs
  if (ts != "") printf "; hora.torch hooks %.0f us: %.2fx", ts, ts / cs
  printf "\n"
}'
