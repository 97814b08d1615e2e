# Cross toolchain for 64-bit ARM Linux boards (Raspberry Pi 3/4/5, Jetson,
# i.MX8 ...): Debian's g++-aarch64-linux-gnu, static binaries, run under
# qemu-aarch64 (ctest uses CMAKE_CROSSCOMPILING_EMULATOR).
# Target libraries come from build/sysroot/aarch64 (scripts/sysroot.sh aarch64).
set(FEDRT_CROSS_TRIPLE aarch64-linux-gnu)
set(FEDRT_CROSS_SYSROOT_NAME aarch64)
set(FEDRT_CROSS_EMULATOR qemu-aarch64)
# Cortex-A53 and later (ARMv8-A); flags live here, not in -DCMAKE_CXX_FLAGS
# (which would replace them).
set(FEDRT_CROSS_FLAGS "-march=armv8-a")
include(${CMAKE_CURRENT_LIST_DIR}/arm-linux-common.cmake)
