# What `cmake --install` and `pip install .` put where. Included last by the top-level
# CMakeLists.txt, once every target exists.
#
# 1. C++ (plain CMake builds): the static libraries with an export set, the public headers
#    of include/hora/ under <prefix>/include/hora (a user writes #include <hora/hora.h>, as
#    the tree's own files do; nothing of core/ or the other source folders is installed),
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

# The public headers: everything in include/hora/. They include only each other, as
# "hora/<name>.h" (tests/packaging builds a consumer against the installed tree, and
# .ci/check_layers.py fails on a public header that includes anything else of the tree).
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/hora" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        COMPONENT dev FILES_MATCHING PATTERN "*.h")

install(TARGETS ${_hora_exported} EXPORT horaTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
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
