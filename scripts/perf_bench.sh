#!/usr/bin/env bash
# Runs hora's benchmarks and regenerates docs/performance.md (and the README's summary table)
# from their output. Each section named below runs its benchmark, keeps its output under
# $BUILD_DIR/perf/, and turns it into the section's data file in docs/bench/
# (scripts/perf_report.py ingest); then scripts/perf_report.py writes the page from every file
# in docs/bench/, rerun or not. Run it on a quiet machine: the figures are what that machine
# does.
#
# Usage: scripts/perf_bench.sh [SECTION...]        (build dir: $HORA_BUILD_DIR or build)
#   no SECTION: every section that runs on one machine without root (all but
#   multihost_allreduce); `scripts/perf_bench.sh none` only regenerates the page
#   (as `python3 scripts/perf_report.py` does).
# Sections:
#   allreduce            hora-bench sweeps at N = 2 and 4, each implementation side by side on
#                        the same buffers: 1. horarun, HORA_BACKEND=builtin: hora (auto, ring,
#                        tree, rd) vs Gloo (ring, bcube); 2. the same with HORA_SHM=0, with the
#                        wire column (the ring's bytes over the same TCP pairs, no reduction);
#                        3. HORA_BACKEND=gloo: hora's algorithms over Gloo's pairs vs Gloo's
#                        own, with their wire column; 4. mpirun, HORA_BACKEND=mpi, hora over
#                        builtin vs Gloo vs MPI_Allreduce; 5. the same with MALLOC_MMAP_MAX_=0
#                        (glibc reuses freed memory, which Open MPI needs to avoid first touches
#                        of fresh scratch at >= 64 MiB). Writes
#                        docs/bench/allreduce_np<N>[_<run>].{csv,svg,txt,cmd}.
#   allreduce_auto       auto against hora's own algorithms under horarun and mpirun
#   allreduce_load       auto's allreduce idle and beside one busy thread per rank
#   engine_fusion        engine_fusion_bench: the fused step, the engine's own cost
#   device_engine        the engine's device path on the fake CUDA runtime: host waits vs finalizer
#   engine_latency       a lone small allreduce through the engine
#   process_sets         a set of 2 in a job of 4 against a 2-rank job, two sets side by side
#   adasum               op Adasum against op Sum through the engine, 16 MiB, 2 and 4 ranks
#   adasum_convergence   examples/pytorch/train.py at 4 ranks, Average against Adasum
#   trainer_scaling      the reference trainer at 2 ranks (benchmarks/trainer_scaling.sh)
#   autotune             HORA_AUTOTUNE=1 against a hand-set sweep (autotune_bench, autotune_torch.sh)
#   torch_scaling        hora.torch vs DDP (benchmarks/python/torch_scaling.py)
#   keras_scaling        hora.keras vs MultiWorkerMirroredStrategy (benchmarks/keras_scaling.py)
#   binding_overhead     what Python adds (benchmarks/python/binding_overhead.sh, hook_path_bench)
#   elastic_recovery     hora's elastic recovery vs a torchrun restart, a commit's cost
#                        (benchmarks/python/elastic_recovery.py)
#   kernels              the CPU kernels against memcpy (kernels_bench, Google Benchmark)
#   multihost_allreduce  2 namespace hosts at 10 Gbit/s (root; benchmarks/multihost_allreduce.sh)
# Env (allreduce): BENCH_ITERS (10), BENCH_WARMUP (2), BENCH_MAX (256M), BENCH_NP ("2 4"),
#   BENCH_RUNS ("builtin shm0 gloo mpi mpi_reuse": which sweeps to redo; the others' files
#   are reused).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HORA_BUILD_DIR:-build}
BENCH=$BUILD_DIR/benchmarks/hora-bench
HORARUN=$BUILD_DIR/launcher/horarun
OUT=docs/bench
RAW=$BUILD_DIR/perf
LOCAL=(allreduce allreduce_auto allreduce_load engine_fusion device_engine engine_latency process_sets adasum
       adasum_convergence trainer_scaling autotune torch_scaling keras_scaling binding_overhead elastic_recovery
       kernels)
sections=("$@")
((${#sections[@]} > 0)) || sections=("${LOCAL[@]}")
[[ ${sections[*]} == none ]] && sections=()
if ((${#sections[@]} > 0)); then
  for f in "$BENCH" "$HORARUN"; do
    [[ -x $f ]] || { echo "perf_bench: $f not built (cmake --build $BUILD_DIR)" >&2; exit 1; }
  done
fi
mkdir -p "$OUT" "$RAW"
PY=$(bash scripts/setup_python.sh --print-python)
[[ -x $PY ]] || PY=python3

shown() { local s="$*"; echo "${s//$BUILD_DIR\//build/}"; }  # a command as the page shows it
ingest() { python3 scripts/perf_report.py ingest "$@"; }
# run LOG COMMAND...: runs one benchmark with its output in LOG; shows the log if it fails.
run() {
  local log=$1
  shift
  echo "== $(shown "$@")" >&2
  "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "perf_bench: the run above failed" >&2; exit 1; }
}
mpi_flags() {  # mpirun flags for N ranks on this machine
  local np=$1 flags=()
  [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
  ((np > $(nproc))) && flags+=(--oversubscribe)
  echo "${flags[@]}"
}

# sweep KIND NP COMMAND...: one allreduce sweep (when KIND is in BENCH_RUNS), command kept.
sweep() {
  local kind=$1 np=$2 name
  shift 2
  [[ " ${BENCH_RUNS-builtin shm0 gloo mpi mpi_reuse} " == *" $kind "* ]] || return 0
  name=allreduce_np${np}
  [[ $kind == builtin ]] || name+=_$kind
  echo "$(shown "$@") --csv $OUT/$name.csv --plot $OUT/$name.svg" >"$OUT/$name.cmd"
  run "$OUT/$name.txt" "$@" --csv "$OUT/$name.csv" --plot "$OUT/$name.svg"
}

bench_allreduce() {
  local sweep=(allreduce -b 8 -e "${BENCH_MAX:-256M}" -f 2 -n "${BENCH_ITERS:-10}"
               -w "${BENCH_WARMUP:-2}" -c 1)
  for np in ${BENCH_NP:-2 4}; do
    sweep builtin "$np" env HORA_BACKEND=builtin "$HORARUN" -np "$np" "$BENCH" "${sweep[@]}" \
      --compare hora,gloo
    sweep shm0 "$np" env HORA_BACKEND=builtin HORA_SHM=0 "$HORARUN" -np "$np" "$BENCH" \
      "${sweep[@]}" --compare hora,gloo,wire
    sweep gloo "$np" env HORA_BACKEND=gloo "$HORARUN" -np "$np" "$BENCH" "${sweep[@]}" \
      --compare hora,gloo,wire
    # shellcheck disable=SC2046
    sweep mpi "$np" env HORA_BACKEND=mpi mpirun -np "$np" $(mpi_flags "$np") "$BENCH" \
      "${sweep[@]}" --backend builtin --compare hora,gloo,mpi
    # shellcheck disable=SC2046
    sweep mpi_reuse "$np" env HORA_BACKEND=mpi mpirun -np "$np" $(mpi_flags "$np") \
      -x MALLOC_MMAP_MAX_=0 "$BENCH" "${sweep[@]}" --backend builtin --compare hora,gloo,mpi
  done
}

bench_allreduce_auto() {
  local args=(allreduce -b 8 -e 256M -f 4 -n 5 -w 3 --rounds 5 --min-ms 10)
  local h=("$HORARUN" -np 2 "$BENCH" "${args[@]}" --compare hora)
  # shellcheck disable=SC2207
  local m=(mpirun $(mpi_flags 2) -np 2 -x HORA_BACKEND=mpi "$BENCH" "${args[@]}" --backend builtin
           --compare hora)
  run "$RAW/auto_horarun.txt" "${h[@]}"
  run "$RAW/auto_mpirun.txt" "${m[@]}"
  ingest allreduce_auto --run horarun "$(shown "${h[@]}")" "$RAW/auto_horarun.txt" \
    --run mpirun "$(shown "${m[@]}")" "$RAW/auto_mpirun.txt"
}

bench_allreduce_load() {
  local base=("$HORARUN" -np 2 "$BENCH" allreduce -b 4K -e 16M -f 16 -n 50 -w 5)
  run "$RAW/load_idle.txt" "${base[@]}" --compare hora --csv "$RAW/load_idle.csv"
  run "$RAW/load_busy.txt" "${base[@]}" --load 1 --compare hora --csv "$RAW/load_busy.csv"
  ingest allreduce_load --run idle "$(shown "${base[@]}") --compare hora" "$RAW/load_idle.csv" \
    --run loaded "$(shown "${base[@]}") --load 1 --compare hora" "$RAW/load_busy.csv"
}

bench_engine_fusion() {
  local cmd=("$HORARUN" -np 2 "$BUILD_DIR/benchmarks/engine_fusion_bench")
  run "$RAW/engine_fusion.txt" "${cmd[@]}"
  ingest engine_fusion --command "$(shown "${cmd[@]}")" "$RAW/engine_fusion.txt"
}

bench_device_engine() {
  local cmd=("$BUILD_DIR/benchmarks/device_engine_bench" --fake-device --ranks 1,2 --rounds 3)
  run "$RAW/device_engine.txt" "${cmd[@]}"
  ingest device_engine --command "$(shown "${cmd[@]}")" "$RAW/device_engine.txt"
}

bench_autotune() {
  local eng=("$HORARUN" -np 2 "$BUILD_DIR/benchmarks/autotune_bench" 200 16384 300 3)
  local tor=(bash benchmarks/autotune_torch.sh "$BUILD_DIR" 3 300 16)
  run "$RAW/autotune_engine.txt" "${eng[@]}"
  run "$RAW/autotune_torch.txt" "${tor[@]}"
  ingest autotune --command "$(shown "${eng[@]}")" --command "$(shown "${tor[@]}")" \
    --engine "$RAW/autotune_engine.txt" --torch "$RAW/autotune_torch.txt"
}

bench_engine_latency() {
  local cmd=("$HORARUN" -np 2 "$BENCH" allreduce -b 4 -e 4096 -f 32 -n 2000 -w 200
             --through-engine)
  run "$RAW/engine_latency.txt" "${cmd[@]}" --csv "$RAW/engine_latency.csv"
  ingest engine_latency --command "$(shown "${cmd[@]}")" --txt "$RAW/engine_latency.txt" \
    "$RAW/engine_latency.csv"
}

bench_adasum() {
  local two=("$HORARUN" -np 2 "$BUILD_DIR/benchmarks/adasum_bench" 5 5)
  local four=("$HORARUN" -np 4 "$BUILD_DIR/benchmarks/adasum_bench" 5 5)
  run "$RAW/adasum_np2.txt" "${two[@]}"
  run "$RAW/adasum_np4.txt" "${four[@]}"
  ingest adasum --command "$(shown "${two[@]}")" --command "$(shown "${four[@]}")" \
    "$RAW/adasum_np2.txt" "$RAW/adasum_np4.txt"
}

bench_adasum_convergence() {
  local cmds=() op
  for op in average adasum; do
    local cmd=(env PYTHONPATH="$BUILD_DIR/python" "$HORARUN" -np 4 "$PY" examples/pytorch/train.py
               --epochs 4 --batch-size 512 --lr 0.05 --samples 16384 --op "$op")
    run "$RAW/adasum_convergence_$op.txt" "${cmd[@]}"
    cmds+=(--command "$(shown "${cmd[@]}")")
  done
  ingest adasum_convergence "${cmds[@]}" "$RAW/adasum_convergence_average.txt" \
    "$RAW/adasum_convergence_adasum.txt"
}

bench_process_sets() {
  local two=("$HORARUN" -np 2 "$BUILD_DIR/benchmarks/process_sets_bench")
  local four=("$HORARUN" -np 4 "$BUILD_DIR/benchmarks/process_sets_bench")
  run "$RAW/process_sets_np2.txt" "${two[@]}"
  run "$RAW/process_sets_np4.txt" "${four[@]}"
  ingest process_sets --command "$(shown "${two[@]}")" --command "$(shown "${four[@]}")" \
    "$RAW/process_sets_np2.txt" "$RAW/process_sets_np4.txt"
}

bench_trainer_scaling() {
  run "$RAW/trainer_scaling.txt" bash benchmarks/trainer_scaling.sh "$BUILD_DIR" builtin
  ingest trainer_scaling --command "bash benchmarks/trainer_scaling.sh build builtin" \
    "$RAW/trainer_scaling.txt"
}

bench_elastic_recovery() {
  run "$RAW/elastic_recovery.txt" "$PY" benchmarks/python/elastic_recovery.py --build "$BUILD_DIR" \
    --repeats 3 --json "$RAW/elastic_recovery.json"
  ingest elastic_recovery --command "python benchmarks/python/elastic_recovery.py --repeats 3" \
    "$RAW/elastic_recovery.json"
}

bench_torch_scaling() {
  run "$RAW/torch_scaling.txt" "$PY" benchmarks/python/torch_scaling.py --build "$BUILD_DIR" \
    --steps 20 --json "$RAW/torch_scaling.json"
  ingest torch_scaling --command "python benchmarks/python/torch_scaling.py --steps 20" \
    "$RAW/torch_scaling.json"
}

bench_keras_scaling() {
  run "$RAW/keras_scaling.txt" env PYTHONPATH="$BUILD_DIR/python" "$PY" \
    benchmarks/keras_scaling.py --horarun "$HORARUN" --json "$RAW/keras_scaling.json"
  ingest keras_scaling --command \
    "python benchmarks/keras_scaling.py --horarun build/launcher/horarun" \
    "$RAW/keras_scaling.json"
}

bench_binding_overhead() {
  run "$RAW/binding_overhead.txt" bash benchmarks/python/binding_overhead.sh "$BUILD_DIR" "$PY"
  run "$RAW/hook_path.txt" env PYTHONPATH="$BUILD_DIR/python" "$PY" \
    benchmarks/python/hook_path_bench.py
  ingest binding_overhead --command "bash benchmarks/python/binding_overhead.sh build" \
    --command "PYTHONPATH=build/python python benchmarks/python/hook_path_bench.py" \
    --hooks "$RAW/hook_path.txt" "$RAW/binding_overhead.txt"
}

bench_kernels() {
  local cmd=("$BUILD_DIR/benchmarks/kernels_bench" --benchmark_min_time=0.2)
  run "$RAW/kernels.txt" "${cmd[@]}" --benchmark_out="$RAW/kernels_bench.json" \
    --benchmark_out_format=json
  ingest kernels --command "$(shown "${cmd[@]}") --benchmark_out=kernels_bench.json \
--benchmark_out_format=json" "$RAW/kernels_bench.json"
}

bench_multihost_allreduce() {
  run "$RAW/multihost.txt" bash benchmarks/multihost_allreduce.sh --build "$BUILD_DIR" \
    --rate 10gbit --out "$RAW/multihost"
  ingest multihost_allreduce --command "benchmarks/multihost_allreduce.sh --rate 10gbit" \
    "$RAW/multihost/allreduce.csv"
}

for section in "${sections[@]}"; do
  declare -F "bench_$section" >/dev/null || {
    echo "perf_bench: unknown section '$section' (see the comment at the top)" >&2
    exit 2
  }
  "bench_$section"
done
python3 scripts/perf_report.py
