#!/usr/bin/env bash
# HORA_AUTOTUNE=1 on the PyTorch MLP step (examples/pytorch/synthetic_benchmark.py, 2 ranks,
# CPU) against a sweep of hand-set configurations, alternating in one sitting, REPS times:
# each hand-set configuration (fusion threshold, cycle time, response cache) after 10 warm-up
# batches, then HORA_AUTOTUNE=1 (every knob free) from the defaults, from a 64 KiB fusion
# threshold and from fusion off, each given BUDGET batches to tune before the same timed
# batches. Prints one line per run: "<label>: <img/sec per rank>" (and what the tuner chose).
# Usage: benchmarks/autotune_torch.sh [BUILD_DIR] [REPS] [BUDGET] [BATCH]
# BATCH (per rank, default 16): a small batch keeps the CPU step's gradient exchange a
# visible part of it.
set -euo pipefail
build=${1:-build}
reps=${2:-3}
budget=${3:-300}
batch=${4:-16}
py=${PYTHON:-/root/.cache/hora/venv/bin/python}
here=$(cd "$(dirname "$0")/.." && pwd)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%FT%TZ)"
run() {  # label, warm-up batches, then env settings
  local label=$1 warm=$2
  shift 2
  local out
  out=$(env "$@" PYTHONPATH="$build/python" "$build/launcher/horarun" -np 2 "$py" \
    "$here/examples/pytorch/synthetic_benchmark.py" --model mlp --no-cuda --batch-size "$batch" \
    --num-warmup-batches "$warm" --num-batches-per-iter 10 --num-iters 5 2>&1 |
    sed -n 's/^\[0\]<stdout>: //p')
  echo "$label: $(echo "$out" | sed -n 's/^Img\/sec per rank: \([0-9.]*\).*/\1/p') img/sec per rank"
  echo "$out" | grep '^Autotune:' | sed 's/^/  /' || true
}
free=HORA_AUTOTUNE_FREE=fusion_threshold,cycle_time,cache
for r in $(seq "$reps"); do
  echo "== rep $r"
  for f in 0 65536 1048576 4194304 16777216 67108864; do
    run "hand-set fusion $f" 10 HORA_FUSION_THRESHOLD=$f
  done
  run "hand-set fusion 67108864, cycle 0.1 ms" 10 HORA_FUSION_THRESHOLD=67108864 HORA_CYCLE_TIME_MS=0.1
  run "hand-set fusion 67108864, cache off" 10 HORA_FUSION_THRESHOLD=67108864 HORA_CACHE_CAPACITY=0
  run "tuned from defaults" "$budget" HORA_AUTOTUNE=1 $free
  run "tuned from fusion 64 KiB" "$budget" HORA_AUTOTUNE=1 $free HORA_FUSION_THRESHOLD=65536
  run "tuned from fusion off" "$budget" HORA_AUTOTUNE=1 $free HORA_FUSION_THRESHOLD=0
done
