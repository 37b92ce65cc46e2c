# HORA_PYTHON: the interpreter the Python binding is built for and tests/python run with
# (they use ${Python3_EXECUTABLE}, which this sets before cmake/HoraDependencies.cmake finds
# Python3). scripts/build.sh passes hora's virtual environment's (scripts/setup_python.sh,
# ${HORA_VENV:-$HOME/.cache/hora/venv}/bin/python); its pybind11, pinned in
# scripts/requirements.txt, then builds the binding too, the same one `pip install .` uses.
# Empty: whichever python3 FindPython3 finds, and pybind11-dev's pybind11.
set(HORA_PYTHON "" CACHE FILEPATH "Python interpreter for the binding and its tests")
if(HORA_PYTHON)
  if(NOT EXISTS "${HORA_PYTHON}")
    message(FATAL_ERROR "HORA_PYTHON=${HORA_PYTHON}: no such interpreter "
                        "(scripts/setup_python.sh creates hora's environment)")
  endif()
  set(Python3_EXECUTABLE "${HORA_PYTHON}")
  execute_process(COMMAND "${HORA_PYTHON}" -c "import pybind11; print(pybind11.get_cmake_dir())"
                  OUTPUT_VARIABLE _dir OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0 AND EXISTS "${_dir}")
    set(pybind11_DIR "${_dir}" CACHE PATH "pybind11's CMake package (HORA_PYTHON's)" FORCE)
  endif()
endif()
