# Cortex-M4F (single-precision FPU, hard-float ABI) on QEMU mps2-an386.
set(FEDRT_CPU_FLAGS "-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
set(FEDRT_MPS2_MACHINE mps2-an386)
include(${CMAKE_CURRENT_LIST_DIR}/cortex-m-common.cmake)
