#!/usr/bin/env bash
# The Python package end to end, without the network: `pip install .` of the source tree into
# a fresh virtual environment, then `pip install -e .` into a second one (sharing the first's
# build directory, so it only re-installs), each running a 2-rank allreduce from Python
# (pip_smoke.py) under the horarun that the install put on PATH.
#
# The fresh environments are layered on hora's (HORA_PYTHON, scripts/setup_python.sh) by a
# .pth file: numpy, scikit-build-core and pybind11 come from there, so pip runs with
# --no-index --no-build-isolation and never reaches the network. Exits 77 (CTest: skipped)
# when HORA_PYTHON lacks those packages.
#
# Usage: pip_install_test.sh SOURCE_DIR HORA_PYTHON [NAME=VALUE...]
#   NAME=VALUE: CMake definitions for the build inside pip (empty values are left out); the
#   CTest entry passes its build's compilers, HORA_WERROR and compiler launchers, so that
#   through ccache the package compiles as cache hits of that build. Without a launcher, ccache if installed.
set -euo pipefail
src=$(cd "$1" && pwd)
hora_python=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
if ! "$hora_python" -c "import numpy, scikit_build_core, pybind11" 2>/dev/null; then
  echo "pip_install_test: skipped: $hora_python lacks numpy, scikit-build-core or pybind11" \
       "(scripts/setup_python.sh installs them)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hora_site=$("$hora_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

# The C++ build inside pip: two jobs, through ccache when there is one.
export CMAKE_BUILD_PARALLEL_LEVEL=2
config=(--config-settings=build-dir="$tmp/build")
has_launcher=0
for define in "$@"; do
  [[ $define == *=?* ]] || continue
  config+=(--config-settings=cmake.define."$define")
  [[ $define == CMAKE_CXX_COMPILER_LAUNCHER=* ]] && has_launcher=1
done
if ((!has_launcher)) && command -v ccache >/dev/null; then
  config+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# step NAME COMMAND...: runs a step, its output shown only when it fails.
step() {
  local name=$1
  shift
  echo "pip_install_test: $name"
  if ! "$@" >"$tmp/step.log" 2>&1; then
    cat "$tmp/step.log"
    echo "pip_install_test: '$name' failed (output above)" >&2
    exit 1
  fi
}

# fresh_venv DIR: a new environment that also sees hora's environment's packages.
fresh_venv() {
  step "python -m venv <tmp>/$(basename "$1")" "$hora_python" -m venv "$1"
  local site
  site=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$hora_site" >"$site/hora_base_env.pth"
}

# smoke VENV EXPECTED_FILE_PREFIX: horarun from VENV's bin/ (first on PATH) runs pip_smoke.py
# on 2 ranks; hora must be imported from under EXPECTED_FILE_PREFIX.
smoke() {
  local venv=$1 where=$2 out
  local horarun
  horarun=$(PATH="$venv/bin:$PATH" command -v horarun)
  [[ $horarun == "$venv/bin/horarun" ]] \
    || { echo "pip_install_test: horarun on PATH is '$horarun', not $venv/bin's" >&2; exit 1; }
  echo "pip_install_test: horarun -np 2 python pip_smoke.py (from <tmp>/$(basename "$venv"))"
  out=$(cd "$tmp" && PATH="$venv/bin:$PATH" horarun -np 2 python "$here/pip_smoke.py" "$where" 2>&1) || {
    echo "$out"
    echo "pip_install_test: the smoke run failed (output above)" >&2
    exit 1
  }
  echo "$out"
  for r in 0 1; do
    grep -q "pip_smoke: rank $r of 2 ok" <<<"$out" \
      || { echo "pip_install_test: rank $r did not report success" >&2; exit 1; }
  done
}

pip_install=(-m pip install --no-index --no-build-isolation --disable-pip-version-check --no-input)

fresh_venv "$tmp/venv"
step "pip install . (the C++ core compiles: a few minutes without ccache)" \
  "$tmp/venv/bin/python" "${pip_install[@]}" "${config[@]}" "$src"
smoke "$tmp/venv" "$tmp/venv/"

fresh_venv "$tmp/venv_editable"
step "pip install -e . (reusing the build directory)" \
  "$tmp/venv_editable/bin/python" "${pip_install[@]}" "${config[@]}" -e "$src"
smoke "$tmp/venv_editable" "$src/adapters/python/hora/"
echo "pip_install_test: ok"
