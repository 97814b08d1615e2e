# Debian packages with CPack (docs/install.md; ./fedrt package runs cpack):
#   host build (release):     fedrt (the programs, units, docs; amd64) and
#                             fedrt-dev (libfedrt_device.a, headers, CMake package)
#   device-only (aarch64, armhf): fedrt-device (the static fedrt-device and its unit)
# The version is the project's (CMakeLists.txt). What goes in each package is
# the install components of cmake/install.cmake.
if(FEDRT_SANITIZE OR FEDRT_FUZZ OR NOT FEDRT_BUILD_HOST)
  return()
endif()
if(NOT FEDRT_DEVICE_ONLY AND NOT TARGET fedrt-coordinator)
  return()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fedrt)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "fedrt")
set(CPACK_PACKAGE_CONTACT "fedrt maintainers <fedrt@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION-RELEASE_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_STRIP_FILES ON)  # the programs without their symbol tables (a third of the arm64 fedrt-device)
set(CPACK_PACKAGE_DIRECTORY "${CMAKE_BINARY_DIR}/packages")
set(_postinst "${CMAKE_SOURCE_DIR}/packaging/postinst")

if(FEDRT_DEVICE_ONLY)
  # The cross builds are static: no Depends. dpkg names the ARM ABIs arm64 and armhf.
  if(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  else()
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE armhf)
  endif()
  set(CPACK_COMPONENTS_ALL device)
  set(CPACK_DEBIAN_DEVICE_PACKAGE_NAME fedrt-device)
  set(CPACK_DEBIAN_DEVICE_PACKAGE_CONFLICTS fedrt)
  set(CPACK_DEBIAN_DEVICE_PACKAGE_CONTROL_EXTRA "${_postinst}")
  set(CPACK_DEBIAN_DEVICE_DESCRIPTION
      "fedrt device and gateway for ARM Linux boards\n A federated device over TLS (static fedrt-device), its systemd unit fedrt-device@.service, and the gateway between devices and the coordinator (static fedrt-gateway, docs/gateways.md).")
else()
  set(CPACK_COMPONENTS_ALL tools docs dev)
  set(CPACK_COMPONENT_TOOLS_GROUP host)
  set(CPACK_COMPONENT_DOCS_GROUP host)
  set(CPACK_COMPONENT_DEV_GROUP dev)
  set(CPACK_DEBIAN_HOST_PACKAGE_NAME fedrt)
  set(CPACK_DEBIAN_HOST_PACKAGE_SHLIBDEPS ON)  # Depends from the programs' shared libraries (dpkg-shlibdeps)
  set(CPACK_DEBIAN_HOST_PACKAGE_RECOMMENDS "python3-matplotlib")  # error.png
  set(CPACK_DEBIAN_HOST_PACKAGE_CONFLICTS fedrt-device)
  set(CPACK_DEBIAN_HOST_PACKAGE_CONTROL_EXTRA "${_postinst}")
  set(CPACK_DEBIAN_HOST_DESCRIPTION
      "federated learning runtime: simulator, TLS coordinator, devices, tools\n fedrt-sim, fedrt-coordinator, fedrt-gateway, fedrt-device, fedrt-keys, fedrt-status, fedrt-data, fedrt-privacy, the systemd units and the documentation.")
  set(CPACK_DEBIAN_DEV_PACKAGE_NAME fedrt-dev)
  # What a consumer of libfedrt_device.a links (cmake/install_device_lib.cmake), and CMake's threads.
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libprotobuf-dev, libsodium-dev, libfmt-dev, libtomlplusplus-dev")
  set(CPACK_DEBIAN_DEV_DESCRIPTION
      "fedrt C++ device library\n libfedrt_device.a (fedrt::Device), its headers and the CMake package: find_package(fedrt), target fedrt::device.")
endif()
include(CPack)
