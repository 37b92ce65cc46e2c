#!/usr/bin/env bash
# The Python package end to end, without the network: `pip install .` of the source tree into
# a fresh virtual environment, then `pip install -e .` into a second one (sharing the first's
# build directory, so it only re-installs), each running a 2-rank allreduce from Python
# (pip_smoke.py) under the horarun that the install put on PATH.
#
# Where hora's environment has TensorFlow and Keras, each install then trains a small model
# with model.fit through hora.keras on 2 ranks (pip_keras_smoke.py). The build inside pip does
# not see TensorFlow (HORA_WITH_TENSORFLOW=OFF), as in pip's default isolated build, so the
# package has no prebuilt op library: the first import builds it from the shipped sources
# into a fresh extension cache (once: one rank builds, the other waits), and the editable
# install finds it there.
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
has_keras=0
if TF_CPP_MIN_LOG_LEVEL=3 "$hora_python" -c "import tensorflow, keras" >/dev/null 2>&1; then
  has_keras=1
  config+=(--config-settings=cmake.define.HORA_WITH_TENSORFLOW=OFF)
  export HORA_EXTENSION_CACHE="$tmp/extensions"
else
  echo "pip_install_test: $hora_python lacks tensorflow or keras: no hora.keras run"
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

# smoke VENV SCRIPT ARGS...: horarun from VENV's bin/ (first on PATH) runs SCRIPT (beside
# this file) with ARGS on 2 ranks, each of which must print "<SCRIPT less .py>: rank R of 2 ok".
# Leaves the output in $out.
smoke() {
  local venv=$1 script=$2
  shift 2
  local horarun
  horarun=$(PATH="$venv/bin:$PATH" command -v horarun)
  [[ $horarun == "$venv/bin/horarun" ]] \
    || { echo "pip_install_test: horarun on PATH is '$horarun', not $venv/bin's" >&2; exit 1; }
  echo "pip_install_test: horarun -np 2 python $script (from <tmp>/$(basename "$venv"))"
  out=$(cd "$tmp" && PATH="$venv/bin:$PATH" horarun -np 2 python "$here/$script" "$@" 2>&1) || {
    echo "$out"
    echo "pip_install_test: the smoke run failed (output above)" >&2
    exit 1
  }
  echo "$out"
  for r in 0 1; do
    grep -q "${script%.py}: rank $r of 2 ok" <<<"$out" \
      || { echo "pip_install_test: rank $r did not report success" >&2; exit 1; }
  done
}

pip_install=(-m pip install --no-index --no-build-isolation --disable-pip-version-check --no-input)

fresh_venv "$tmp/venv"
step "pip install . (the C++ core compiles: a few minutes without ccache)" \
  "$tmp/venv/bin/python" "${pip_install[@]}" "${config[@]}" "$src"
smoke "$tmp/venv" pip_smoke.py "$tmp/venv/"
if ((has_keras)); then
  site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
  [[ ! -e $site/hora/tensorflow/_hora_tf_ops.so
     && -f $site/hora/_ext_src/adapters/tensorflow/ops.cc ]] \
    || { echo "pip_install_test: expected no prebuilt op library and the shipped sources" \
              "under $site/hora" >&2; exit 1; }
  smoke "$tmp/venv" pip_keras_smoke.py "$tmp/venv/" "$HORA_EXTENSION_CACHE/"
  builds=$(grep -c "hora: building the TensorFlow op library" <<<"$out" || true)
  ((builds == 1)) \
    || { echo "pip_install_test: the op library was built $builds times, not once" >&2; exit 1; }
fi

fresh_venv "$tmp/venv_editable"
step "pip install -e . (reusing the build directory)" \
  "$tmp/venv_editable/bin/python" "${pip_install[@]}" "${config[@]}" -e "$src"
smoke "$tmp/venv_editable" pip_smoke.py "$src/adapters/python/hora/"
if ((has_keras)); then
  smoke "$tmp/venv_editable" pip_keras_smoke.py "$src/adapters/python/hora/" \
    "$HORA_EXTENSION_CACHE/"
  ! grep "hora: building" <<<"$out" \
    || { echo "pip_install_test: the editable install rebuilt the op library" >&2; exit 1; }
fi
echo "pip_install_test: ok"
