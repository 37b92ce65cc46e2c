# TensorFlow for hora.tensorflow's op library (adapters/tensorflow/) and its tests
# (tests/python/tensorflow/): HORA_WITH_TENSORFLOW = AUTO (on when the Python the binding is
# built for imports tensorflow), ON (required) or OFF. Off, hora.tensorflow builds the op
# library from the package's shipped sources at its first import (hora/_extension.py). Sets HORA_HAVE_TENSORFLOW and, from
# tf.sysconfig, HORA_TF_VERSION, HORA_TF_COMPILE_FLAGS and HORA_TF_LINK_FLAGS. Included by
# every CMakeLists that needs the answer (the summary line prints once); importing TensorFlow
# takes seconds, so it is asked once per interpreter and kept in the cache.
get_property(_hora_tf_said GLOBAL PROPERTY HORA_TF_SAID)
set_property(GLOBAL PROPERTY HORA_TF_SAID ON)
macro(_hora_tf_say)
  if(NOT _hora_tf_said)
    message(STATUS ${ARGN})
  endif()
endmacro()

set(HORA_WITH_TENSORFLOW AUTO CACHE STRING "Build hora.tensorflow's ops (AUTO, ON, OFF)")
set_property(CACHE HORA_WITH_TENSORFLOW PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${HORA_WITH_TENSORFLOW}" _hora_tf_with)

set(HORA_HAVE_TENSORFLOW OFF)
if(_hora_tf_with STREQUAL "OFF")
  _hora_tf_say("hora: TENSORFLOW: off (HORA_WITH_TENSORFLOW=OFF)")
  return()
endif()
if(NOT HORA_HAVE_PYTHON OR NOT Python3_EXECUTABLE)
  if(_hora_tf_with STREQUAL "ON")
    message(FATAL_ERROR "hora: HORA_WITH_TENSORFLOW=ON needs the Python binding (HORA_WITH_PYTHON)")
  endif()
  _hora_tf_say("hora: TENSORFLOW: off (no Python binding)")
  return()
endif()

if(NOT HORA_TF_FLAGS_FOR STREQUAL Python3_EXECUTABLE)
  # The last line printed is "version#flag|flag...#flag|flag..." (anything before it is noise).
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env TF_CPP_MIN_LOG_LEVEL=3 "${Python3_EXECUTABLE}" -c
            "import tensorflow as tf; s = tf.sysconfig; print(tf.__version__, '|'.join(s.get_compile_flags()), '|'.join(s.get_link_flags()), sep='#')"
    OUTPUT_VARIABLE _out ERROR_QUIET RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(_version "")
  set(_compile "")
  set(_link "")
  if(_rc EQUAL 0)
    string(REGEX MATCH "[^\n]*$" _last "${_out}")
    string(REPLACE "#" ";" _fields "${_last}")
    list(LENGTH _fields _n)
    if(_n EQUAL 3)
      list(GET _fields 0 _version)
      list(GET _fields 1 _compile)
      list(GET _fields 2 _link)
      string(REPLACE "|" ";" _compile "${_compile}")
      string(REPLACE "|" ";" _link "${_link}")
    endif()
  endif()
  set(HORA_TF_VERSION "${_version}" CACHE INTERNAL "TensorFlow's version")
  set(HORA_TF_COMPILE_FLAGS "${_compile}" CACHE INTERNAL "tf.sysconfig.get_compile_flags()")
  set(HORA_TF_LINK_FLAGS "${_link}" CACHE INTERNAL "tf.sysconfig.get_link_flags()")
  set(HORA_TF_FLAGS_FOR "${Python3_EXECUTABLE}" CACHE INTERNAL "Where the TF flags came from")
endif()

if(HORA_TF_VERSION)
  set(HORA_HAVE_TENSORFLOW ON)
  _hora_tf_say("hora: TENSORFLOW: on, found TensorFlow ${HORA_TF_VERSION} "
               "(${Python3_EXECUTABLE})")
elseif(_hora_tf_with STREQUAL "ON")
  message(FATAL_ERROR "hora: HORA_WITH_TENSORFLOW=ON but ${Python3_EXECUTABLE} cannot import "
                      "tensorflow (scripts/setup_python.sh installs it)")
else()
  _hora_tf_say("hora: TENSORFLOW: off, ${Python3_EXECUTABLE} cannot import tensorflow "
               "(hora.tensorflow builds its op library at first import; "
               "scripts/setup_python.sh installs TensorFlow for the tests)")
endif()
