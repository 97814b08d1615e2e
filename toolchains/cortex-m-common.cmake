# Shared part of the bare-metal Cortex-M toolchains (cortex-m4f.cmake,
# cortex-m3.cmake). The including file sets FEDRT_CPU_FLAGS and
# FEDRT_MPS2_MACHINE first. Flags live here (the *_FLAGS_INIT variables), not
# in -DCMAKE_C_FLAGS, which would replace them and drop -mcpu.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_SIZE arm-none-eabi-size CACHE STRING "size tool of the firmware toolchain")
set(CMAKE_NM arm-none-eabi-nm CACHE STRING "nm of the firmware toolchain")
# No OS to link a test program against while CMake probes the compiler.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# Link-time optimisation: the images are linked from one optimised program
# (inlining and dead-code removal across units and libraries), about 7 % less
# flash, which TLS 1.3 needs on the 96 KB part (docs/microcontrollers.md).
# Static libraries keep GCC's intermediate code: gcc-ar and gcc-ranlib index it.
set(FEDRT_FW_COMMON_FLAGS "${FEDRT_CPU_FLAGS} -ffunction-sections -fdata-sections -flto")
find_program(FEDRT_FW_GCC_AR arm-none-eabi-gcc-ar REQUIRED)
find_program(FEDRT_FW_GCC_RANLIB arm-none-eabi-gcc-ranlib REQUIRED)
set(CMAKE_AR "${FEDRT_FW_GCC_AR}" CACHE FILEPATH "archiver that keeps LTO objects indexed")
set(CMAKE_RANLIB "${FEDRT_FW_GCC_RANLIB}" CACHE FILEPATH "ranlib that indexes LTO objects")
set(CMAKE_C_FLAGS_INIT "${FEDRT_FW_COMMON_FLAGS}")
# Firmware C++: no exceptions, no RTTI, no thread-safe statics, no atexit
# registration of static destructors (nothing of libsupc++ is linked).
set(CMAKE_CXX_FLAGS_INIT
    "${FEDRT_FW_COMMON_FLAGS} -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-use-cxa-atexit")
set(CMAKE_ASM_FLAGS_INIT "${FEDRT_CPU_FLAGS}")
# newlib-nano, no semihosting C library (platform/mps2 provides the few
# system calls), our own startup code (-nostartfiles), dead sections dropped.
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "${FEDRT_CPU_FLAGS} --specs=nano.specs --specs=nosys.specs -nostartfiles -Wl,--gc-sections -flto")
# Link C++ executables with the C driver: g++ would add -lstdc++ (and the
# 1.5 GB libstdc++-arm-none-eabi-newlib package), which firmware never needs.
set(CMAKE_CXX_LINK_EXECUTABLE
    "<CMAKE_C_COMPILER> <FLAGS> <CMAKE_CXX_LINK_FLAGS> <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")

set(CMAKE_EXECUTABLE_SUFFIX_C ".elf")
set(CMAKE_EXECUTABLE_SUFFIX_CXX ".elf")

# ctest runs firmware under qemu-system-arm; the wrapper appends -kernel ELF,
# bounds the run with a timeout and returns the semihosting exit code.
set(CMAKE_CROSSCOMPILING_EMULATOR
    "${CMAKE_CURRENT_LIST_DIR}/../platform/mps2/qemu-run.sh;--machine;${FEDRT_MPS2_MACHINE}")

# Host programs (python, qemu) are found on the host; headers and libraries
# of the target come from the toolchain (Eigen is header-only, found as a package).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
