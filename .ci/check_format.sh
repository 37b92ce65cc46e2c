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
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]} > 0)); then
  printf '  %s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted" \
       "(bash .ci/check_format.sh --fix formats them)"
  exit 1
fi
echo "check_format: all ${#files[@]} files formatted"
