#!/usr/bin/env bash
# gpu_check.sh: everything hora can only check on a machine with NVIDIA GPUs, in one run of a
# few minutes, with one summary at the end. Run it as is from the repository root:
#
#   bash scripts/gpu_check.sh            # build-gpu/, every GPU of the machine
#   HORA_BUILD_DIR=build-x HORA_GPU_MAX_RANKS=2 bash scripts/gpu_check.sh
#   HORA_GPU_PREBUILT=1 HORA_BUILD_DIR=.gpu/build-gpu bash scripts/gpu_check.sh  # a bundle
#
# Steps (each logged to $BUILD_DIR/gpu_check.<step>.log; the tail of a failing log is shown):
#   1. configure (HORA_WITH_NCCL=ON, -Werror; Gloo and MPI off: not needed here; the Python
#      binding when pybind11 is found, for HORA_GPU_PYTHON's interpreter) and build only the
#      targets below;
#   2. cuda_kernels_test: the CUDA kernels against the CPU kernels, bit for bit;
#   3. nccl_backend_test: the NCCL communicator's logic against a fake (no GPU needed);
#   4. nccl_mp_test at N = 1 .. the number of GPUs (one rank per GPU; NCCL refuses two on one):
#      native collectives and hora's algorithms over NCCL on device buffers;
#   5. the engine on device memory: device_engine_test and device_collectives_test (its
#      logic over a fake runtime), device_engine_gpu_test (the CUDA runtime; the engine staged
#      at N = 1, 2 in process and over NCCL at N = 1; init with HORA_BACKEND=nccl) and
#      device_collectives_gpu_test (the casts; allgather, alltoall, reducescatter and
#      fp16/bf16-compressed allreduce read on a stream that Handle::wait_on_stream made wait,
#      staged at N = 1, 2 and over NCCL at N = 1);
#   6. hora.torch on CUDA tensors (tests/python/gpu, through gpu_main.py): N = 1 over NCCL,
#      N = 2 staged through host memory (HORA_BACKEND=builtin: both ranks may share one GPU),
#      and N = the number of GPUs over NCCL when there are several;
#   7. cuda_kernels_bench: kernel bandwidth against a device memcpy, as bytes moved (read and
#      written) per second: reduce float32/bfloat16/float16, sum and average with scaling, and
#      the batched pack and unpack, plain and scaled (targets >= 0.85x);
#   8. hora-bench --device cuda --compare nccl --through-engine at N = 1 and N = the number of
#      GPUs: hora's native and own algorithms and its engine beside ncclAllReduce, 8 B .. 256 MiB;
#   9. ResNet-50 at batch 64, one rank (examples/pytorch/synthetic_benchmark.py, torchvision's
#      model): the plain optimizer against hora.torch, without and with fp16 compression,
#      alternating twice (targets >= 0.98x and >= 0.95x).
# The engine's fused step (200 x 64 KiB at one rank against one ncclAllReduce of the same
# bytes plus one device memcpy; target <= 1.1x) is printed by device_engine_gpu_test (step 5).
# The summary ends with every "target:" line of the logs: each figure, its target, met/missed.
# A missing GPU fails every GPU step (HORA_TEST_REQUIRE_GPU=1): here a skip is a failure.
# Exit status: 0 when every step passed, 1 otherwise.
# HORA_GPU_PYTHON: the interpreter with torch (default: hora's setup environment, else python3).
# HORA_GPU_PREBUILT=1: the build directory is a bundle of scripts/gpu_bundle.sh, built on a
#   machine with hora's build dependencies: configure and build are skipped, and the Python
#   binding is compiled here against the bundle's static libraries (step "binding").
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HORA_BUILD_DIR:-build-gpu}
PY=${HORA_GPU_PYTHON:-}
if [[ -z $PY ]]; then
  PY=$HOME/.cache/hora/venv/bin/python
  [[ -x $PY ]] || PY=$(command -v python3)
fi
JOBS=${HORA_JOBS:-$(nproc)}
# hora loads libnccl.so.2 when first used: where the system has none, the nvidia-nccl wheel's
# (the one torch loads) will do.
if ! ldconfig -p 2>/dev/null | grep -q "libnccl.so.2 "; then
  wheel_nccl=$("$PY" -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null || true)
  [[ -n $wheel_nccl ]] && export LD_LIBRARY_PATH=$wheel_nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export HORA_TEST_REQUIRE_GPU=1
mkdir -p "$BUILD_DIR"

summary=()
failed=0
# step NAME COMMAND...: runs COMMAND with its output in the step's log; records the outcome.
step() {
  local name=$1
  shift
  local log="$BUILD_DIR/gpu_check.$name.log"
  local start=$SECONDS
  echo "== $name: $*" | tee "$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  local took=$((SECONDS - start))
  if [[ $rc -eq 0 ]]; then
    summary+=("PASS  $name (${took}s)")
  else
    summary+=("FAIL  $name (exit $rc, ${took}s; log: $log)")
    failed=1
    tail -n +2 "$log" | tail -n 30
  fi
  return $rc
}

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
echo "gpu_check: $gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)"
max_ranks=${HORA_GPU_MAX_RANKS:-$gpus}
((max_ranks > gpus)) && max_ranks=$gpus

configure() {
  if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                                               -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHORA_WERROR=ON \
      -DHORA_WITH_NCCL=ON -DHORA_WITH_GLOO=OFF -DHORA_WITH_MPI=OFF -DHORA_WITH_PYTHON=AUTO \
      -DHORA_PYTHON="$PY" "${launcher[@]}"
  fi
}
build() {
  local python=()
  cmake --build "$BUILD_DIR" --target help | grep -q "hora_python" && python=(hora_python)
  cmake --build "$BUILD_DIR" -j "$JOBS" --target cuda_kernels_test nccl_backend_test \
    nccl_mp_test cuda_kernels_bench hora-bench horarun device_engine_test device_finalizer_test \
    device_engine_gpu_test device_collectives_test device_collectives_gpu_test "${python[@]}"
}
# torch_cuda N [ENV...]: hora.torch's CUDA tests under horarun -np N.
torch_cuda() {
  local n=$1
  shift
  env PYTHONPATH="$BUILD_DIR/python" HORA_START_TIMEOUT_S=60 HORA_TIMEOUT_S=120 "$@" \
    timeout 300 "$BUILD_DIR/launcher/horarun" -np "$n" "$PY" tests/python/gpu/gpu_main.py
}

# resnet50: step 9. Prints each run's img/s and the "target:" lines.
resnet50() {
  "$PY" -c "import torchvision" || { echo "resnet50: torchvision is missing for $PY"; return 1; }
  local args=(examples/pytorch/synthetic_benchmark.py --model resnet50 --batch-size 64
              --num-warmup-batches 10 --num-batches-per-iter 10 --num-iters 5)
  local plain=() hora=() fp16=()
  # rate CMD...: the "Img/sec per rank" figure of one run (rank 0's line under horarun).
  rate() { "$@" 2>&1 | sed 's/^\[0\]<stdout>: //' | sed -n 's/^Img\/sec per rank: \([0-9.]*\).*/\1/p'; }
  for run in 1 2; do
    plain+=("$(rate timeout 600 "$PY" "${args[@]}" --no-hora)")
    hora+=("$(rate env PYTHONPATH="$BUILD_DIR/python" HORA_TIMEOUT_S=120 timeout 600 \
      "$BUILD_DIR/launcher/horarun" -np 1 "$PY" "${args[@]}")")
    fp16+=("$(rate env PYTHONPATH="$BUILD_DIR/python" HORA_TIMEOUT_S=120 timeout 600 \
      "$BUILD_DIR/launcher/horarun" -np 1 "$PY" "${args[@]}" --fp16-allreduce)")
    echo "run $run: plain ${plain[-1]:-?} img/s, hora.torch ${hora[-1]:-?}, hora.torch fp16 ${fp16[-1]:-?}"
  done
  # The better of the two runs of each, and the ratios against the plain optimizer's.
  "$PY" - "${plain[*]}" "${hora[*]}" "${fp16[*]}" <<'PYEOF'
import sys
best = [max((float(x) for x in a.split()), default=0.0) for a in sys.argv[1:4]]
plain, hora, fp16 = best
if not (plain and hora and fp16):
    sys.exit("resnet50: a run printed no img/s (its log has why)")
for name, v, target in (("hora.torch", hora, 0.98), ("hora.torch with fp16 compression", fp16, 0.95)):
    r = v / plain
    verdict = "met" if r >= target else "missed"
    print(f"target: ResNet-50 one rank, {name} over the plain optimizer: {r:.3f}x "
          f"({v:.1f} vs {plain:.1f} img/s; target >= {target:.2f}x): {verdict}")
PYEOF
}

# The Python binding from a bundle's static libraries: adapters/python/*.cc compiled for $PY
# with its pybind11, beside the package's .py sources, in $BUILD_DIR/python/hora.
binding() {
  local inc pyinc ext objs=() pids=()
  inc=$("$PY" -c "import pybind11; print(pybind11.get_include())") || return 1
  pyinc=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  ext=$("$PY" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  mkdir -p "$BUILD_DIR/python/hora" "$BUILD_DIR/binding"
  cp -r adapters/python/hora/. "$BUILD_DIR/python/hora/"
  for src in adapters/python/*.cc; do
    local obj="$BUILD_DIR/binding/$(basename "$src" .cc).o"
    objs+=("$obj")
    c++ -std=c++17 -O2 -DNDEBUG -fPIC -fvisibility=hidden -DHORA_HAVE_NCCL=1 -I. -Iinclude \
      -isystem "$pyinc" -isystem "$inc" -isystem /usr/local/cuda/include -c "$src" -o "$obj" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || return 1; done
  local crypto
  crypto=$(ls /usr/lib/x86_64-linux-gnu/libcrypto.so* /usr/lib64/libcrypto.so* 2>/dev/null | head -n 1)
  # Every library the bundle packed, in one group (their order then does not matter).
  c++ -shared -o "$BUILD_DIR/python/hora/_core$ext" "${objs[@]}" -Wl,--start-group \
    "$BUILD_DIR"/libs/*.a -Wl,--end-group "$crypto" -lrt -ldl -lpthread
}
built() {
  if [[ ${HORA_GPU_PREBUILT:-0} == 1 ]]; then
    summary+=("SKIP  configure, build (HORA_GPU_PREBUILT=1: $BUILD_DIR from scripts/gpu_bundle.sh)")
    # The C++ steps run whether or not it builds; without it the torch steps fail naming it.
    compgen -G "$BUILD_DIR/python/hora/_core*" >/dev/null || step binding binding
    return 0
  fi
  step configure configure && step build build
}

if built; then
  bin=$BUILD_DIR
  horarun=$bin/launcher/horarun
  step cuda_kernels_test "$bin/tests/kernels/cuda/cuda_kernels_test"
  step nccl_backend_test "$bin/tests/collectives/backends/nccl/nccl_backend_test"
  if ((max_ranks < 1)); then
    summary+=("FAIL  nccl_mp_test (no GPU found by nvidia-smi)")
    failed=1
  fi
  for ((n = 1; n <= max_ranks; ++n)); do
    HORA_START_TIMEOUT_S=60 HORA_TIMEOUT_S=120 \
      step "nccl_mp_test.np$n" timeout 300 "$horarun" -np "$n" "$bin/tests/mp/nccl/nccl_mp_test"
  done
  step device_engine_test "$bin/tests/core/device_engine_test"
  step device_finalizer_test "$bin/tests/core/device_finalizer_test"
  step device_engine_gpu_test timeout 300 "$bin/tests/core/device_engine_gpu_test"
  step device_collectives_test "$bin/tests/core/device_collectives_test"
  step device_collectives_gpu_test timeout 300 "$bin/tests/core/device_collectives_gpu_test"
  if [[ -f "$BUILD_DIR/python/hora/__init__.py" ]]; then
    step torch_cuda.np1 torch_cuda 1
    step torch_cuda_staged.np2 torch_cuda 2 HORA_BACKEND=builtin
    ((max_ranks > 1)) && step "torch_cuda.np$max_ranks" torch_cuda "$max_ranks"
  else
    summary+=("FAIL  torch_cuda (no Python binding built: pybind11 for $PY missing?)")
    failed=1
  fi
  step cuda_kernels_bench "$bin/benchmarks/cuda_kernels_bench"
  for n in $( ((max_ranks > 1)) && echo "1 $max_ranks" || echo 1); do
    step "hora_bench.np$n" timeout 300 "$horarun" -np "$n" "$bin/benchmarks/hora-bench" \
      allreduce --device cuda -b 8 -e 256M -f 8 -n 20 -w 5 --compare nccl --through-engine
  done
  if [[ -f "$BUILD_DIR/python/hora/__init__.py" ]]; then
    step resnet50 resnet50
  else
    summary+=("FAIL  resnet50 (no Python binding built)")
    failed=1
  fi
fi

echo
echo "== gpu_check summary ($gpus GPU(s), $(date -u +%FT%TZ))"
for line in "${summary[@]}"; do echo "$line"; done
for log in "$BUILD_DIR"/gpu_check.cuda_kernels_bench.log "$BUILD_DIR"/gpu_check.hora_bench.np*.log \
  "$BUILD_DIR"/gpu_check.resnet50.log; do
  [[ -f $log ]] || continue
  echo
  echo "== $(basename "$log" .log | sed 's/^gpu_check\.//')"
  grep -v "^==" "$log" | tail -n 40
done
# The issue's targets in one place: the kernels, the engine's fused step, ResNet-50.
echo
echo "== targets"
grep -h "^target:" "$BUILD_DIR"/gpu_check.cuda_kernels_bench.log \
  "$BUILD_DIR"/gpu_check.device_engine_gpu_test.log "$BUILD_DIR"/gpu_check.resnet50.log 2>/dev/null |
  sed 's/^target: //'
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1);" \
  "CUDA runtime: $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p');" \
  "torch: $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null)"
exit $failed
