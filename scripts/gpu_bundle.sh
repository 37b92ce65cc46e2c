#!/usr/bin/env bash
# gpu_bundle.sh: builds hora's GPU checks on this machine (it needs nvcc and nccl.h, not a GPU)
# and packs them into one folder for a GPU machine that lacks hora's build dependencies
# (GoogleTest, Google Benchmark, CLI11, OpenSSL's headers): there,
#
#   HORA_GPU_PREBUILT=1 HORA_BUILD_DIR=BUNDLE bash scripts/gpu_check.sh
#
# runs every step of scripts/gpu_check.sh on the packed binaries, compiling only the Python
# binding, for that machine's python3 with its pybind11, against the packed static libraries.
#
#   bash scripts/gpu_bundle.sh [BUNDLE]     # default .gpu/build-gpu (~30 MB); build in build-gpu/
#
# The binaries link the CUDA runtime statically and load libnccl.so.2 when first used, so the
# GPU machine needs only its driver and an NCCL (LD_LIBRARY_PATH may point at the nvidia-nccl
# wheel's lib/, the one torch loads). Nothing is compiled for Python here.
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-.gpu/build-gpu}
BUILD_DIR=${HORA_BUILD_DIR:-build-gpu}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                                             -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHORA_WERROR=ON \
    -DHORA_WITH_NCCL=ON -DHORA_WITH_GLOO=OFF -DHORA_WITH_MPI=OFF -DHORA_WITH_PYTHON=OFF \
    "${launcher[@]}" >"$BUILD_DIR.configure.log" 2>&1 || { cat "$BUILD_DIR.configure.log"; exit 1; }
fi
# The binaries scripts/gpu_check.sh runs, at their paths in a build tree.
bins=(tests/kernels/cuda/cuda_kernels_test tests/collectives/backends/nccl/nccl_backend_test
      tests/mp/nccl/nccl_mp_test benchmarks/cuda_kernels_bench benchmarks/hora-bench
      launcher/horarun tests/core/device_engine_test tests/core/device_finalizer_test
      tests/core/device_engine_gpu_test
      tests/core/device_collectives_test tests/core/device_collectives_gpu_test)
# What the binding links (adapters/python/CMakeLists.txt: hora and what it depends on).
libs=(core/libhora.a collectives/libhora_collectives.a kernels/cpu/libhora_kernels.a
      kernels/cuda/libhora_cuda_kernels.a core/base/libhora_base.a)
targets=()
for b in "${bins[@]}" "${libs[@]}"; do targets+=("$(basename "$b" .a | sed 's/^lib//')"); done
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}"
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/libs"
for b in "${bins[@]}"; do
  mkdir -p "$BUNDLE/$(dirname "$b")"
  cp "$BUILD_DIR/$b" "$BUNDLE/$b"
  strip "$BUNDLE/$b"
done
for l in "${libs[@]}"; do cp "$BUILD_DIR/$l" "$BUNDLE/libs/"; done
cudart=$(sed -n 's/^CUDA_cudart_static_LIBRARY:FILEPATH=//p' "$BUILD_DIR/CMakeCache.txt")
cp "$cudart" "$BUNDLE/libs/"
echo "gpu_bundle: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)) from $(git rev-parse --short HEAD)$(git diff --quiet || echo +changes)"
