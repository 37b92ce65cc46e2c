#!/usr/bin/env bash
# Fails when a tracked C, C++ or CUDA file is not as clang-format (with the repository's
# .clang-format) would write it, naming each such file. With --fix, rewrites them in place
# instead (what the tree-wide formatting commit runs).
# Usage: .ci/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h' '*.cu' '*.cuh')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
# One clang-format for every file (a process per file costs a minute on a loaded machine); it
# names each unformatted file in its "code should be clang-formatted" diagnostics.
rc=0
out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1) || rc=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
  <<<"$out" | sort -u)
if ((rc != 0 && ${#bad[@]} == 0)); then
  printf '%s\n' "$out"
  echo "check_format: clang-format failed (exit $rc)"
  exit 1
fi
if ((${#bad[@]} > 0)); then
  printf '  %s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted" \
       "(bash .ci/check_format.sh --fix formats them)"
  exit 1
fi
echo "check_format: all ${#files[@]} files formatted"
