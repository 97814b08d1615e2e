# Device-only builds (FEDRT_DEVICE_ONLY, presets aarch64 and armhf with
# toolchains/aarch64-linux-gnu.cmake, toolchains/arm-linux-gnueabihf.cmake):
# fedrt-device and the device unit tests, linked statically against the
# target libraries of the project's sysroot (scripts/sysroot.sh).
if(NOT FEDRT_DEVICE_ONLY)
  return()
endif()

# Static archives only (the binaries are -static; Debian's -dev packages
# ship both .a and .so).
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)

# Debian builds fmt and toml++ as shared libraries only; on the device both
# are used header-only. Defining the imported targets first makes their
# package configurations (found by find_package in CMakeLists.txt) keep them.
find_path(FEDRT_FMT_INCLUDE fmt/format.h REQUIRED)
foreach(_t fmt::fmt fmt::fmt-header-only)
  add_library(${_t} INTERFACE IMPORTED)
  set_target_properties(${_t} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${FEDRT_FMT_INCLUDE}"
    INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
endforeach()
find_path(FEDRT_TOMLPP_INCLUDE toml++/toml.h REQUIRED)
add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
set_target_properties(tomlplusplus::tomlplusplus PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${FEDRT_TOMLPP_INCLUDE}"
  INTERFACE_COMPILE_DEFINITIONS TOML_HEADER_ONLY=1)

# spdlog likewise (the gateway's log, fedrt_log): header-only over the
# header-only fmt. Both of its package's targets, so that its configuration
# keeps them.
find_path(FEDRT_SPDLOG_INCLUDE spdlog/spdlog.h REQUIRED)
foreach(_t spdlog::spdlog spdlog::spdlog_header_only)
  add_library(${_t} INTERFACE IMPORTED)
  set_target_properties(${_t} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${FEDRT_SPDLOG_INCLUDE}"
    INTERFACE_COMPILE_DEFINITIONS "SPDLOG_HEADER_ONLY;SPDLOG_FMT_EXTERNAL"
    INTERFACE_LINK_LIBRARIES fmt::fmt)
endforeach()

message(STATUS "fedrt: device-only build for ${CMAKE_SYSTEM_PROCESSOR}"
               " (emulator: ${CMAKE_CROSSCOMPILING_EMULATOR})")
