# Shared part of the ARM Linux toolchains (aarch64-linux-gnu.cmake,
# arm-linux-gnueabihf.cmake set FEDRT_CROSS_TRIPLE, FEDRT_CROSS_SYSROOT_NAME,
# FEDRT_CROSS_EMULATOR and FEDRT_CROSS_FLAGS, then include this file).
#
# - Compilers: Debian's cross g++ with its own C library and libstdc++.
# - Target libraries (mbedTLS, protobuf-lite, GoogleTest and the header-only
#   libraries): Debian's packages for the target unpacked into the
#   project-owned sysroot build/sysroot/<name> by scripts/sysroot.sh; every
#   find_* looks only there (never in the host's /usr).
# - Device binaries link statically, so qemu-user runs them without -L
#   (qemu -L with multiarch glibc installed can hang).
set(CMAKE_SYSTEM_NAME Linux)
if(FEDRT_CROSS_TRIPLE MATCHES "^aarch64")
  set(CMAKE_SYSTEM_PROCESSOR aarch64)
else()
  set(CMAKE_SYSTEM_PROCESSOR arm)
endif()

set(CMAKE_C_COMPILER ${FEDRT_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${FEDRT_CROSS_TRIPLE}-g++)

get_filename_component(_fedrt_source_dir "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(FEDRT_SYSROOT "${_fedrt_source_dir}/build/sysroot/${FEDRT_CROSS_SYSROOT_NAME}")
if(NOT EXISTS "${FEDRT_SYSROOT}/.fedrt-sysroot")
  message(FATAL_ERROR "fedrt: the ${FEDRT_CROSS_SYSROOT_NAME} sysroot is missing (${FEDRT_SYSROOT}); "
                      "run scripts/sysroot.sh ${FEDRT_CROSS_SYSROOT_NAME} (./fedrt build ${FEDRT_CROSS_SYSROOT_NAME} does it)")
endif()
set(CMAKE_FIND_ROOT_PATH "${FEDRT_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # protoc, python run on the host
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# -ffp-contract=off: no fused multiply-add contractions (GCC contracts by
# default on ARMv8 / VFPv4), so a board computes the same double-precision
# iterates as the x86-64 simulator and coordinator (fleet == simulator).
# -Wno-psabi: GCC's notes about an ABI change of GCC 7.1 on ARM are not ours.
set(CMAKE_C_FLAGS_INIT "${FEDRT_CROSS_FLAGS} -ffp-contract=off -Wno-psabi")
set(CMAKE_CXX_FLAGS_INIT "${FEDRT_CROSS_FLAGS} -ffp-contract=off -Wno-psabi")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

find_program(FEDRT_QEMU_USER ${FEDRT_CROSS_EMULATOR} NO_CMAKE_FIND_ROOT_PATH)
if(FEDRT_QEMU_USER)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${FEDRT_QEMU_USER}")
else()
  message(WARNING "fedrt: ${FEDRT_CROSS_EMULATOR} not found (apt-get install qemu-user): "
                  "the cross-built tests cannot run")
endif()
