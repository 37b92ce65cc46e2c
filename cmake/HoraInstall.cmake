# What `cmake --install` and `pip install .` put where. Included last by the top-level
# CMakeLists.txt, once every target exists.
#
# 1. C++ (plain CMake builds): the static libraries with an export set, the public headers
#    under <prefix>/include/hora (included as "core/hora.h", so the include root is
#    include/hora, never include/ itself: no top-level "core/" in /usr/local/include),
#    horarun in <prefix>/bin, and horaConfig.cmake + horaConfigVersion.cmake in
#    <prefix>/<libdir>/cmake/hora. A separate project then does
#        find_package(hora REQUIRED)
#        target_link_libraries(app PRIVATE hora::hora)   # or hora::adapter_cpp
#    and horaConfig.cmake finds what hora was built with (Threads, OpenSSL, Gloo, MPI, CUDA).
# 2. Python wheels (scikit-build-core sets SKBUILD; see pyproject.toml): only the extension
#    module, into the wheel's hora/ beside the package's .py files (which pyproject.toml's
#    wheel.packages copies), and horarun into the environment's scripts directory (bin/).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# hora_link_closure(OUT TARGETS...): TARGETS and every non-imported target they link,
# transitively (an installed static library needs all of them).
function(hora_link_closure out)
  set(pending ${ARGN})
  set(seen "")
  while(pending)
    list(POP_FRONT pending t)
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      set(t ${aliased})
    endif()
    get_target_property(imported ${t} IMPORTED)
    if(imported OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(libs ${t} LINK_LIBRARIES)
    get_target_property(interface_libs ${t} INTERFACE_LINK_LIBRARIES)
    foreach(lib IN LISTS libs interface_libs)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
      if(TARGET "${lib}")
        list(APPEND pending ${lib})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# The names a consumer sees, the same in this build tree (add_subdirectory users) and in an
# installed tree: hora_<x> is hora::<x> (hora::base, hora::kernels, hora::collectives,
# hora::adapter_cpp, and any library they come to link), and hora itself is hora::hora.
hora_link_closure(_hora_exported hora hora_adapter_cpp)
foreach(_t IN LISTS _hora_exported)
  string(REGEX REPLACE "^hora_" "" _name "${_t}")
  set_target_properties(${_t} PROPERTIES EXPORT_NAME ${_name})
  add_library(hora::${_name} ALIAS ${_t})
endforeach()

if(SKBUILD)
  if(NOT TARGET hora_python)
    message(FATAL_ERROR "hora: a Python wheel needs the binding's target hora_python "
                        "(adapters/python), which this configuration did not create")
  endif()
  install(TARGETS hora_python LIBRARY DESTINATION hora COMPONENT python)
  install(TARGETS horarun RUNTIME DESTINATION "${SKBUILD_SCRIPTS_DIR}" COMPONENT python)
  return()
endif()

# hora_public_headers(OUT ROOTS...): ROOTS and every header they include through quoted
# "dir/file.h" paths of this source tree, transitively. Re-configures when one of them changes
# so that a new include is installed too.
function(hora_public_headers out)
  set(pending ${ARGN})
  set(seen "")
  while(pending)
    list(POP_FRONT pending header)
    if(header IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${header})
    set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 "${PROJECT_SOURCE_DIR}/${header}")
    file(STRINGS "${PROJECT_SOURCE_DIR}/${header}" lines REGEX "^#include \"[^\"]+\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      if(NOT EXISTS "${PROJECT_SOURCE_DIR}/${included}")
        message(FATAL_ERROR "hora: public header ${header} includes \"${included}\", "
                            "which is not a path under ${PROJECT_SOURCE_DIR}")
      endif()
      list(APPEND pending ${included})
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# The headers a user includes: the API, the framework-neutral gradient reducer and the C++
# adapter. Everything they include comes along; nothing else of core/ is installed.
file(GLOB _hora_adapter_headers RELATIVE "${PROJECT_SOURCE_DIR}"
     "${PROJECT_SOURCE_DIR}/adapters/cpp/*.h")
set(_hora_roots core/hora.h ${_hora_adapter_headers})
if(EXISTS "${PROJECT_SOURCE_DIR}/core/gradient_reducer.h")
  list(APPEND _hora_roots core/gradient_reducer.h)
endif()
hora_public_headers(_hora_headers ${_hora_roots})
set(HORA_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/hora")
foreach(_h IN LISTS _hora_headers)
  get_filename_component(_dir "${_h}" DIRECTORY)
  install(FILES "${_h}" DESTINATION "${HORA_INSTALL_INCLUDEDIR}/${_dir}" COMPONENT dev)
endforeach()

install(TARGETS ${_hora_exported} EXPORT horaTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
        INCLUDES DESTINATION "${HORA_INSTALL_INCLUDEDIR}")
install(TARGETS horarun EXPORT horaTargets RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        COMPONENT runtime)
set_target_properties(horarun PROPERTIES EXPORT_NAME horarun)

set(HORA_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/hora")
install(EXPORT horaTargets NAMESPACE hora:: DESTINATION "${HORA_CMAKE_DIR}" COMPONENT dev)
configure_package_config_file(cmake/horaConfig.cmake.in
                              "${PROJECT_BINARY_DIR}/horaConfig.cmake"
                              INSTALL_DESTINATION "${HORA_CMAKE_DIR}")
# Below 1.0 a minor release may change the API, so find_package(hora 0.1) accepts 0.1.x only;
# from 1.0 on, the same major version.
set(_hora_compat SameMajorVersion)
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_hora_compat SameMinorVersion)
endif()
write_basic_package_version_file("${PROJECT_BINARY_DIR}/horaConfigVersion.cmake"
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY ${_hora_compat})
install(FILES "${PROJECT_BINARY_DIR}/horaConfig.cmake"
              "${PROJECT_BINARY_DIR}/horaConfigVersion.cmake"
        DESTINATION "${HORA_CMAKE_DIR}" COMPONENT dev)
