# Cross toolchain for 32-bit ARM Linux boards with a hardware FPU (Raspberry
# Pi 2/3 in 32-bit mode, BeagleBone, STM32MP1 ...): Debian's
# g++-arm-linux-gnueabihf (ARMv7-A, VFPv3-D16, Thumb-2 by default), static
# binaries, run under qemu-arm (ctest uses CMAKE_CROSSCOMPILING_EMULATOR).
# Target libraries come from build/sysroot/armhf (scripts/sysroot.sh armhf).
set(FEDRT_CROSS_TRIPLE arm-linux-gnueabihf)
set(FEDRT_CROSS_SYSROOT_NAME armhf)
set(FEDRT_CROSS_EMULATOR qemu-arm)
# Debian's armhf baseline, spelled out so the ABI does not depend on defaults.
set(FEDRT_CROSS_FLAGS "-march=armv7-a -mfpu=vfpv3-d16 -mfloat-abi=hard")
include(${CMAKE_CURRENT_LIST_DIR}/arm-linux-common.cmake)
