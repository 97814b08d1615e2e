# Cortex-M3 (no FPU, soft float) on QEMU mps2-an385.
set(FEDRT_CPU_FLAGS "-mcpu=cortex-m3 -mthumb -mfloat-abi=soft")
set(FEDRT_MPS2_MACHINE mps2-an385)
include(${CMAKE_CURRENT_LIST_DIR}/cortex-m-common.cmake)
