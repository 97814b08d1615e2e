# The Python module (runtime/python, docs/python.md): fedrt._fedrt built with
# Debian's pybind11 for Debian's python3, and the fedrt package next to it in
# build/<preset>/python/fedrt (put build/<preset>/python on sys.path).
set(FEDRT_PYTHON_EXECUTABLE "/usr/bin/python3" CACHE FILEPATH "Python the module is built for (Debian's)")
if(NOT EXISTS "${FEDRT_PYTHON_EXECUTABLE}")
  message(STATUS "fedrt python module: ${FEDRT_PYTHON_EXECUTABLE} not found, not built")
  return()
endif()
set(PYBIND11_FINDPYTHON ON)
set(Python_EXECUTABLE "${FEDRT_PYTHON_EXECUTABLE}")
find_package(pybind11 CONFIG QUIET)
if(NOT pybind11_FOUND)
  message(STATUS "fedrt python module: pybind11 not found (Debian: python3-pybind11), not built")
  return()
endif()

set(FEDRT_PYTHON_DIR ${CMAKE_BINARY_DIR}/python)
pybind11_add_module(fedrt_python MODULE
  runtime/python/module.cc
  runtime/python/bind_experiment.cc
  runtime/python/bind_run.cc
  runtime/python/bind_problems.cc
  runtime/python/bind_privacy.cc)
set_target_properties(fedrt_python PROPERTIES OUTPUT_NAME _fedrt LIBRARY_OUTPUT_DIRECTORY ${FEDRT_PYTHON_DIR}/fedrt)
target_link_libraries(fedrt_python PRIVATE fedrt_host fedrt_privacy)

# The package's Python files, copied at build time so edits reach the build.
file(GLOB FEDRT_PYTHON_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/runtime/python/fedrt/*.py
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/python/fedrt/py.typed)
set(_copied)
foreach(src ${FEDRT_PYTHON_SOURCES})
  get_filename_component(name ${src} NAME)
  add_custom_command(OUTPUT ${FEDRT_PYTHON_DIR}/fedrt/${name}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${src} ${FEDRT_PYTHON_DIR}/fedrt/${name}
    DEPENDS ${src} VERBATIM)
  list(APPEND _copied ${FEDRT_PYTHON_DIR}/fedrt/${name})
endforeach()
add_custom_target(fedrt_python_package ALL DEPENDS ${_copied})
add_dependencies(fedrt_python fedrt_python_package)
