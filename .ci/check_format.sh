#!/usr/bin/env bash
# Fails when a tracked C, C++ or CUDA file is not as clang-format (with the repository's
# .clang-format) would write it, naming each such file, or when a tracked Python file is not as
# `ruff format` would write it or has a `ruff check` finding (pyproject.toml's [tool.ruff]; ruff
# is pinned in scripts/requirements.txt and run from hora's Python environment, which
# scripts/setup_python.sh creates or updates first). With --fix, rewrites them in place instead
# (what the tree-wide formatting commit runs): clang-format, `ruff check --fix`, `ruff format`;
# a ruff finding it cannot fix still fails.
# Usage: .ci/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h' '*.cu' '*.cuh')
mapfile -t py_files < <(git ls-files '*.py' '*.pyi')
bash scripts/setup_python.sh
ruff=("$(bash scripts/setup_python.sh --print-python)" -m ruff)
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  "${ruff[@]}" check --fix --quiet "${py_files[@]}" || exit 1
  "${ruff[@]}" format --quiet "${py_files[@]}"
  echo "check_format: formatted ${#py_files[@]} Python files"
  exit 0
fi

# Python: ruff names each finding and each file it would reformat.
failed=0
if ! "${ruff[@]}" check --quiet "${py_files[@]}"; then
  echo "check_format: ruff check has findings (bash .ci/check_format.sh --fix fixes what it can)"
  failed=1
fi
if ! "${ruff[@]}" format --check "${py_files[@]}"; then
  echo "check_format: Python files are not formatted (bash .ci/check_format.sh --fix formats them)"
  failed=1
fi
((failed == 0)) && echo "check_format: all ${#py_files[@]} Python files formatted and lint-clean"

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
exit "$failed"
