#!/usr/bin/env bash
# Builds the store protocol fuzz target with clang's libFuzzer and runs it for a bounded
# time. Exits 77 (a visible CTest skip) when clang or libFuzzer is missing.
set -euo pipefail
root=$1; out=$2; seconds=${3:-20}
command -v clang++ >/dev/null || { echo "clang++ not found: skipping the fuzz run"; exit 77; }
mkdir -p "$out"
if ! clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -I"$root" -I"$root/include" \
    "$root/tests/collectives/rendezvous/store_protocol_fuzz.cc" \
    "$root/collectives/rendezvous/store_protocol.cc" "$root/core/base/status.cc" \
    -o "$out/store_protocol_fuzz" 2>"$out/fuzz_build.log"; then
  if grep -q "libclang_rt.fuzzer\|cannot find" "$out/fuzz_build.log"; then
    echo "libFuzzer runtime missing (libclang-rt-14-dev): skipping"; exit 77
  fi
  cat "$out/fuzz_build.log"; exit 1
fi
"$out/store_protocol_fuzz" -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=4096 \
  -print_final_stats=1 2>&1 | tail -15
