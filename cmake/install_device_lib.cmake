# The installed C++ device library (docs/install.md, docs/device-api.md):
# libfedrt_device.a holds fedrt_linux_device and every static library of the
# project it links (config, problems, data, TLS with the project's mbedTLS,
# wire with the generated protobuf code, SecAgg+, libcsv), so a consumer links
# nothing of the build tree. What stays outside are Debian's shared libraries
# (protobuf-lite, libsodium, fmt, toml++), named in fedrt-targets.cmake.
# Included by cmake/install.cmake (host builds only).

# Static archives of TARGET's link closure into OUT_ARCHIVES (generator
# expressions) and the shared libraries or imported targets into OUT_SHARED.
function(_fedrt_link_closure target out_archives out_shared)
  set(_todo ${target})
  set(_seen "")
  set(_archives "")
  set(_shared "")
  while(_todo)
    list(POP_FRONT _todo _item)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _item "${_item}")
    if(_item MATCHES "^\\$<" OR _item STREQUAL "" OR _item IN_LIST _seen)
      continue()
    endif()
    list(APPEND _seen "${_item}")
    if(TARGET ${_item})
      get_target_property(_imported ${_item} IMPORTED)
      get_target_property(_type ${_item} TYPE)
      if(_imported)
        if(NOT _type STREQUAL "INTERFACE_LIBRARY")
          list(APPEND _shared ${_item})
        endif()
      elseif(_type STREQUAL "STATIC_LIBRARY")
        list(APPEND _archives "$<TARGET_FILE:${_item}>")
      endif()
      get_target_property(_deps ${_item} INTERFACE_LINK_LIBRARIES)
      if(_deps)
        list(APPEND _todo ${_deps})
      endif()
    elseif(_item MATCHES "\\.a$")
      list(APPEND _archives "${_item}")
    else()
      list(APPEND _shared "${_item}")
    endif()
  endwhile()
  set(${out_archives} ${_archives} PARENT_SCOPE)
  set(${out_shared} ${_shared} PARENT_SCOPE)
endfunction()

_fedrt_link_closure(fedrt_linux_device _fedrt_dev_archives _fedrt_dev_shared)
# The shared libraries by name (-lNAME), as a consumer's linker finds them
# in the Debian -dev packages of docs/install.md.
set(FEDRT_DEVICE_LINK_NAMES "")
foreach(_lib IN LISTS _fedrt_dev_shared)
  if(TARGET ${_lib})
    set(_target ${_lib})
    get_target_property(_lib ${_target} IMPORTED_LOCATION_RELEASE)
    if(NOT _lib)
      get_target_property(_lib ${_target} IMPORTED_LOCATION_NONE)
    endif()
    if(NOT _lib)
      get_target_property(_lib ${_target} IMPORTED_LOCATION)
    endif()
  endif()
  get_filename_component(_name "${_lib}" NAME)
  string(REGEX REPLACE "^lib([^.]+)\\.so.*$" "\\1" _name "${_name}")
  if(_name AND NOT _name IN_LIST FEDRT_DEVICE_LINK_NAMES)
    list(APPEND FEDRT_DEVICE_LINK_NAMES ${_name})
  endif()
endforeach()
message(STATUS "fedrt::device links, besides libfedrt_device.a: ${FEDRT_DEVICE_LINK_NAMES} and Threads")

# One archive from all of them (binutils' ar MRI script; members of the same
# name in two archives are both kept).
set(_mri "${CMAKE_BINARY_DIR}/install/fedrt_device.mri")
set(_merged "${CMAKE_BINARY_DIR}/install/libfedrt_device.a")
list(TRANSFORM _fedrt_dev_archives PREPEND "ADDLIB " OUTPUT_VARIABLE _addlibs)
string(REPLACE ";" "\n" _addlibs "${_addlibs}")
file(GENERATE OUTPUT "${_mri}" CONTENT "CREATE ${_merged}.tmp\n${_addlibs}\nSAVE\nEND\n")
add_custom_command(OUTPUT "${_merged}"
  COMMAND ${CMAKE_COMMAND} -E rm -f "${_merged}.tmp"
  COMMAND ${CMAKE_AR} -M < "${_mri}"
  COMMAND ${CMAKE_RANLIB} "${_merged}.tmp"
  COMMAND ${CMAKE_COMMAND} -E rename "${_merged}.tmp" "${_merged}"
  DEPENDS ${_fedrt_dev_archives} "${_mri}"
  COMMENT "libfedrt_device.a: fedrt_linux_device and the static libraries it links"
  VERBATIM)
add_custom_target(fedrt_device_archive ALL DEPENDS "${_merged}")

install(FILES "${_merged}" DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# Headers: the device API and what it includes (core, data).
install(FILES runtime/include/fedrt/device.h runtime/include/fedrt/user_model.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fedrt COMPONENT dev)
install(DIRECTORY runtime/include/fedrt/core runtime/include/fedrt/data
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fedrt COMPONENT dev FILES_MATCHING PATTERN "*.h")

# The CMake package: fedrt-config.cmake, its version file and the targets.
include(CMakePackageConfigHelpers)
set(_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/fedrt")
set(FEDRT_INSTALL_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
set(FEDRT_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
file(RELATIVE_PATH FEDRT_CMAKE_DIR_TO_PREFIX "/prefix/${_cmake_dir}" "/prefix")
configure_package_config_file(packaging/cmake/fedrt-config.cmake.in "${CMAKE_BINARY_DIR}/install/fedrt-config.cmake"
  INSTALL_DESTINATION "${_cmake_dir}")
write_basic_package_version_file("${CMAKE_BINARY_DIR}/install/fedrt-config-version.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
configure_file(packaging/cmake/fedrt-targets.cmake.in "${CMAKE_BINARY_DIR}/install/fedrt-targets.cmake" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/install/fedrt-config.cmake" "${CMAKE_BINARY_DIR}/install/fedrt-config-version.cmake"
              "${CMAKE_BINARY_DIR}/install/fedrt-targets.cmake"
        DESTINATION "${_cmake_dir}" COMPONENT dev)
