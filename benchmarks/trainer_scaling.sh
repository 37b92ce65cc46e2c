#!/usr/bin/env bash
# The reference trainer's scaling figures: one plain process (no hora in the step) at batch 64
# and 128, 2 ranks at per-rank batch 64 overlapped and reducing after backward, on each
# backend given (default builtin gloo). Prints each run's line, then efficiency = 2-rank samples/s / (2 x 1-rank
# samples/s) and the share of communication hidden behind backward =
# 1 - (wait after backward, overlapped) / (wait after backward, not overlapped).
# Then, once, what two processes cost each other on this machine without any communication:
# two plain 1-process trainers at once (each one's step against one alone), and memcpy
# bandwidth of one process alone against each of two at once (the memory bus).
# Usage: benchmarks/trainer_scaling.sh [BUILD_DIR] [backends...]
set -euo pipefail
build=${1:-build}
shift || true
backends=("$@")
[[ ${#backends[@]} -gt 0 ]] || backends=(builtin gloo)
bench="$build/benchmarks/trainer_scaling_bench"
horarun="$build/launcher/horarun"
rate() { sed -n 's/.*: \([0-9]*\) samples\/s.*/\1/p' <<<"$1"; }
wait_ms() { sed -n 's/.*after backward \([0-9.]*\) ms.*/\1/p' <<<"$1"; }
line() { grep "samples/s" <<<"$1" | sed 's/^\[0\]<stdout>: //'; }

for backend in "${backends[@]}"; do
  export HORA_BACKEND=$backend
  one=$(line "$("$horarun" -np 1 "$bench" --batch-size 64 --plain)")
  big=$(line "$("$horarun" -np 1 "$bench" --batch-size 128 --plain)")
  two=$(line "$("$horarun" -np 2 "$bench" --batch-size 64)")
  two_late=$(line "$("$horarun" -np 2 "$bench" --batch-size 64 --no-overlap)")
  echo "backend $backend"
  printf '  %s\n' "$one" "$big" "$two" "$two_late"
  awk -v r1="$(rate "$one")" -v rb="$(rate "$big")" -v r2="$(rate "$two")" \
      -v r2l="$(rate "$two_late")" -v w="$(wait_ms "$two")" -v wl="$(wait_ms "$two_late")" 'BEGIN {
    printf "  scaling efficiency at 2 ranks: %.1f%% overlapped, %.1f%% reducing after backward\n",
           100 * r2 / (2 * r1), 100 * r2l / (2 * r1)
    printf "  2 ranks vs one process at batch 128: %.2fx\n", r2 / rb
    if (wl > 0) printf "  communication hidden behind backward: %.0f%%\n", 100 * (1 - w / wl)
  }'
done

# Sharing the machine, without hora: two plain trainers at once, and memcpy alone vs two at once.
step_ms() { sed -n 's/.*step \([0-9.]*\) ms.*/\1/p' <<<"$1"; }
alone=$(line "$("$bench" --batch-size 64 --plain)")
pair=$( ("$bench" --batch-size 64 --plain & "$bench" --batch-size 64 --plain & wait) | grep "samples/s")
m1=$("$bench" --memcpy)
m2=$( ("$bench" --memcpy & "$bench" --memcpy & wait) | tr '\n' ' ')
echo "sharing (no hora):"
printf '  %s\n' "alone: $alone" "two at once: $(tr '\n' ';' <<<"$pair")" "$m1 alone; $m2 two at once"
awk -v a="$(step_ms "$alone")" -v p="$(step_ms "$(head -1 <<<"$pair")")" 'BEGIN {
  if (a > 0) printf "  a plain step beside another plain process: %.2fx its time alone\n", p / a
}'
