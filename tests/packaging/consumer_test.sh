#!/usr/bin/env bash
# The C++ package end to end: `cmake --install` of a built hora tree into a fresh prefix, a
# separate project (consumer/) configured with find_package(hora) against that prefix only
# and built, then run under the installed horarun with -np 2.
#
# Usage: consumer_test.sh BUILD_DIR CONSUMER_SOURCE_DIR
set -euo pipefail
build_dir=$1
consumer_src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# step NAME COMMAND...: runs a step, its output shown only when it fails.
step() {
  local name=$1
  shift
  echo "consumer_test: $name"
  if ! "$@" >"$tmp/step.log" 2>&1; then
    cat "$tmp/step.log"
    echo "consumer_test: '$name' failed (output above)" >&2
    exit 1
  fi
}

step "cmake --install $build_dir --prefix <tmp>/prefix" cmake --install "$build_dir" --prefix "$prefix"
for f in bin/horarun include/hora/hora.h include/hora/distributed_optimizer.h; do
  [[ -e $prefix/$f ]] || { echo "consumer_test: $f is missing from the install" >&2; exit 1; }
done
config=$(find "$prefix" -name horaConfig.cmake)
[[ -n $config ]] || { echo "consumer_test: no horaConfig.cmake installed" >&2; exit 1; }
# No path of the source or build tree may leak into the installed package files.
if grep -rl -e "$(cd "$build_dir" && pwd)" -e "$(cd "$consumer_src/../../.." && pwd)/core" \
     "$(dirname "$config")"; then
  echo "consumer_test: the installed CMake files above name the build or source tree" >&2
  exit 1
fi

step "configure consumer/ with CMAKE_PREFIX_PATH=<tmp>/prefix" \
  cmake -S "$consumer_src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
grep "hora_consumer:" "$tmp/step.log"
step "build consumer/" cmake --build "$tmp/build"

echo "consumer_test: <tmp>/prefix/bin/horarun -np 2 hora_consumer"
out=$("$prefix/bin/horarun" -np 2 "$tmp/build/hora_consumer" 2>&1) || {
  echo "$out"
  echo "consumer_test: the consumer failed under horarun (output above)" >&2
  exit 1
}
echo "$out"
for r in 0 1; do
  grep -q "rank $r of 2: allreduce of 1000 floats ok" <<<"$out" \
    || { echo "consumer_test: rank $r did not report success" >&2; exit 1; }
done
echo "consumer_test: ok"
