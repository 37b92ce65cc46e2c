#!/usr/bin/env bash
# The sanitizer stages of .ci/run: hora built with clang (through ccache) and a sanitizer, then
# a stated subset of the tests run with zero reports allowed (a report fails its test: UBSan
# does not recover, ASan and TSan halt on the first error).
#
#   .ci/sanitize.sh build-asan   build-asan/: the libraries with -fsanitize=address,undefined
#                                 and -Wthread-safety -Werror (so this compile is also the
#                                 thread-safety stage), and the ASan subset's tests
#   .ci/sanitize.sh asan         run the ASan+UBSan subset (every backend, the engine, the
#                                 store, the launcher)
#   .ci/sanitize.sh tsan         build-tsan/ with -fsanitize=thread and run the TSan subset
#                                 (the engine, the transports, the store)
#
# Suppressions (third-party code only, each with its reason) are in .ci/sanitizers/.
# Subsets: every test of the GoogleTest binaries named below (CTest discovers them), plus the
# multi-process tests matched by the regex; see ASAN_MP and TSAN_MP.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
supp=$root/.ci/sanitizers
mode=${1:?usage: sanitize.sh build-asan|asan|tsan}
# ccache: paths under the checkout are hashed relative to it (and the working directory not at
# all), so a fresh clone at another path still hits what an earlier run compiled.
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1

# Unit and in-process tests: the Status/config/layout vocabulary, the engine's pieces (its
# device path over a fake runtime included), the stores, the builtin transports (shm, the
# in-place span allreduce, TCP), gloo, hora's algorithms over in-process ranks, and the
# launcher.
ASAN_UNIT="base_test config_test layout_test round_counts_test engine_units_test handle_test
  request_version_test
  gradient_reducer_test engine_lease_test device_engine_test device_collectives_test ready_events_test context_test registry_test
  device_finalizer_test
  store_test failed_ranks_test
  builtin_frame_test builtin_communicator_test builtin_shm_allreduce_test
  builtin_shm_span_allreduce_test builtin_tcp_security_test gloo_communicator_test
  hora_collectives_algorithms_test launcher_unit_test horarun_process_test"
# Multi-process: each backend (builtin shm, builtin TCP, gloo, mpi) at 3 ranks, the engine on
# three of them, its pause, a killed peer, and the MPI backend's own suite.
ASAN_MP_TARGETS="communicator_mp_test engine_mp_test engine_pause_mp_test peer_kill_probe
  chaos_probe mpi_communicator_mp_test process_sets_mp_test"
ASAN_MP='^(communicator_mp_test\.np3\.(builtin|builtin_tcp|gloo|mpi)|engine_mp_test\.np3\.(builtin|gloo)|engine_mp_test\.np2\.mpi|engine_pause_mp_test\.np2\.builtin|peer_kill\.np3\.builtin|chaos\.kill\.allreduce\.np3\.builtin|mpi_communicator_mp_test_np2|process_sets_mp_test\.np3\.(builtin|gloo))$'
# TSan: what has threads of its own or is called from several: the engine (its thread, the
# API's callers, handles, the queue, the timeline writer), the stores (the TCP store server's
# thread, clients from many threads), the builtin transports' in-process tests. Gloo and MPI
# are left to the ASan stage: their libraries are not built with TSan, so it would not see
# their own synchronisation.
TSAN_UNIT="base_test engine_units_test handle_test request_version_test burst_end_test engine_lease_test gradient_reducer_test device_engine_test
  device_collectives_test device_finalizer_test store_test builtin_communicator_test
  builtin_shm_allreduce_test builtin_tcp_security_test"
TSAN_MP_TARGETS="engine_mp_test engine_pause_mp_test engine_api_mp_test engine_help_mp_test
  process_sets_mp_test"
TSAN_MP='^(engine_mp_test\.np2\.(builtin|builtin_tcp)|engine_pause_mp_test\.np2\.builtin|engine_api_mp_test\.np2\.builtin|engine_help_mp_test\.np2\.builtin|process_sets_mp_test\.np3\.builtin)$'

configure() {  # configure DIR SANITIZER_FLAGS EXTRA_CXX_FLAGS
  local dir=$1 san=$2 extra=$3
  [[ -f $dir/build.ninja ]] && return 0
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DHORA_WERROR=ON -DHORA_WITH_NCCL=OFF -DHORA_WITH_PYTHON=OFF -DHORA_WITH_TENSORFLOW=OFF \
    "-DCMAKE_C_FLAGS=$san" "-DCMAKE_CXX_FLAGS=$san $extra" \
    "-DCMAKE_EXE_LINKER_FLAGS=$san" "-DCMAKE_SHARED_LINKER_FLAGS=$san" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
}

run_tests() {  # run_tests DIR MP_REGEX
  local dir=$1 mp=$2
  cd "$dir"
  # The unit binaries' discovered tests (nothing else is built here: -E NOT_BUILT skips the
  # placeholders of the binaries left out), then the multi-process subset.
  ctest -j 2 --timeout 600 --output-on-failure -LE 'mp|fuzz|chaos|python|bench|multihost|packaging|elastic' \
    -E NOT_BUILT
  ctest -j 2 --timeout 600 --output-on-failure -R "$mp"
}

asan_flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
case "$mode" in
  build-asan)
    mkdir -p build-asan
    configure build-asan "$asan_flags" "-Wthread-safety"
    # shellcheck disable=SC2086
    cmake --build build-asan -j 2 --target hora hora_collectives horarun $ASAN_UNIT \
      $ASAN_MP_TARGETS
    ;;
  asan)
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    run_tests build-asan "$ASAN_MP"
    ;;
  tsan)
    mkdir -p build-tsan
    configure build-tsan "-fsanitize=thread -fno-omit-frame-pointer" ""
    # shellcheck disable=SC2086
    cmake --build build-tsan -j 2 --target horarun $TSAN_UNIT $TSAN_MP_TARGETS
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
    run_tests build-tsan "$TSAN_MP"
    ;;
  *) echo "usage: sanitize.sh build-asan|asan|tsan" >&2; exit 2 ;;
esac
