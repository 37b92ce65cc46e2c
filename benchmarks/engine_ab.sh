#!/usr/bin/env bash
# The engine's costs of two builds side by side, alternating in one sitting (ratios from one
# run are what to read on a shared machine): engine_fusion_bench (fused 200 x 16 KiB over one
# raw allreduce, the 200 x 4 B step, its enqueues) and hora-bench --through-engine at 4 B -
# 4 KiB, at 2 ranks under horarun, RUNS times each.
# Usage: benchmarks/engine_ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [RUNS]
#   e.g. git worktree add /tmp/old <rev> && HORA_BUILD_DIR=/tmp/old/build bash /tmp/old/scripts/build.sh
#        bash benchmarks/engine_ab.sh /tmp/old/build build 3
set -euo pipefail
old=${1:?usage: engine_ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [RUNS]}
new=${2:?usage: engine_ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [RUNS]}
runs=${3:-3}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%FT%TZ)"
for r in $(seq "$runs"); do
  for b in "$old" "$new"; do
    echo "== $b, run $r"
    "$b/launcher/horarun" -np 2 "$b/benchmarks/engine_fusion_bench" 2>&1 |
      sed -n 's/^\[0\]<stdout>: //p' | grep -E "raw|fused|4 B|enqueueing"
    "$b/launcher/horarun" -np 2 "$b/benchmarks/hora-bench" allreduce -b 4 -e 4096 -f 32 \
      -n 2000 -w 200 --through-engine 2>&1 | sed -n 's/^\[0\]<stdout>: //p' |
      awk '/^ +[0-9]/ {printf "  through the engine, %s B: %s us (raw allreduce %s us)\n", $1, $6, $8}'
  done
done
