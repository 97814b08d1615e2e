# `cmake --install` and the Debian packages (docs/install.md).
#
# Host builds (preset release) install, by component:
#   tools   the fedrt-* programs, the plot scripts, the systemd units and
#           their sample environment files
#   dev     libfedrt_device.a (fedrt::Device, docs/device-api.md) with its
#           headers and the CMake package (find_package(fedrt), target
#           fedrt::device)
#   docs    README.md and docs/ under share/doc/fedrt
# Tests, benchmarks, examples and the firmware are not installed.
# Device-only builds (presets aarch64, armhf) install fedrt-device and the
# device unit (component device). CPack turns either into .deb files
# (cmake/packaging.cmake).
include(GNUInstallDirs)

set(FEDRT_SYSTEMD_DIR "lib/systemd/system" CACHE STRING "Where the systemd units go (relative to the prefix)")
set(_fedrt_units "${CMAKE_SOURCE_DIR}/packaging/systemd")

# The systemd units with this install's paths (cmake/install_units.cmake).
function(fedrt_install_units component)
  install(CODE "set(FEDRT_UNIT_SRC \"${_fedrt_units}\")
set(FEDRT_UNITS \"${ARGN}\")
set(FEDRT_UNIT_DIR \"${FEDRT_SYSTEMD_DIR}\")
set(FEDRT_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
set(FEDRT_DATADIR \"${CMAKE_INSTALL_DATADIR}/fedrt\")
set(FEDRT_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
set(FEDRT_UNIT_TMP \"${CMAKE_BINARY_DIR}/install/units\")" COMPONENT ${component})
  install(SCRIPT "${CMAKE_SOURCE_DIR}/cmake/install_units.cmake" COMPONENT ${component})
  install(FILES "${_fedrt_units}/fedrt.sysusers" DESTINATION lib/sysusers.d RENAME fedrt.conf COMPONENT ${component})
endfunction()

if(FEDRT_DEVICE_ONLY)
  install(TARGETS fedrt-device fedrt-gateway RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT device)
  fedrt_install_units(device fedrt-device@.service)
  install(FILES "${_fedrt_units}/device.env.example" DESTINATION ${CMAKE_INSTALL_DATADIR}/fedrt COMPONENT device)
  return()
endif()

if(NOT TARGET fedrt-coordinator OR FEDRT_SANITIZE OR FEDRT_FUZZ)
  return()  # only the host release build has something to install
endif()

# --- tools ---------------------------------------------------------------
set(_fedrt_programs fedrt-sim fedrt-data fedrt-privacy fedrt-keys fedrt-status fedrt-coordinator fedrt-device fedrt-gateway)
# Linked as installed (no build-tree RUNPATH, e.g. Open MPI's library folder,
# which the installed fedrt-sim does not need and which mold's output has no
# room to rewrite at install time).
set_target_properties(${_fedrt_programs} PROPERTIES BUILD_WITH_INSTALL_RPATH ON)
install(TARGETS ${_fedrt_programs}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
# Every plot script with the modules they share (FEDRT_PLOT_SCRIPT names one).
install(DIRECTORY scripts/ DESTINATION ${CMAKE_INSTALL_DATADIR}/fedrt COMPONENT tools
        FILES_MATCHING PATTERN "plot_*.py")
fedrt_install_units(tools fedrt-coordinator.service fedrt-device@.service)
install(FILES "${_fedrt_units}/coordinator.env.example" "${_fedrt_units}/device.env.example"
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fedrt COMPONENT tools)

# --- docs ----------------------------------------------------------------
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT docs)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT docs)

# --- dev: the C++ device library as one self-contained archive ----------
include(${CMAKE_CURRENT_LIST_DIR}/install_device_lib.cmake)
