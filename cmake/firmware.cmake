# Cortex-M firmware on QEMU mps2 (toolchains/cortex-m4f.cmake, cortex-m3.cmake).
# Included from CMakeLists.txt only when CMAKE_SYSTEM_NAME is Generic; the host
# simulator and host tests are not built in these presets (FEDRT_BUILD_HOST=OFF).
#
#   fedrt_add_firmware(<name> SOURCES <src>... [STACK_SIZE <bytes>]
#                      [LIBRARIES <target>...] [LAYOUT large|nrf52840] [NO_STANDALONE_RUN]
#                      [EXCLUDE_FROM_CHECKS] [FOOTPRINT_LOG <file>])
# builds <name>.elf with the mps2 startup code, vector table, UART/timer/
# semihosting layer and provisioning block (platform/mps2) compiled into its
# own sources, linked with platform/mps2/<machine>.ld (96 KB flash / 32 KB
# RAM) or, with LAYOUT large, <machine>-large.ld (128 KB / 64 KB), or with
# LAYOUT nrf52840, mps2-an386-nrf52840.ld (1 MB / 256 KB), plus <name>.map.
# Every firmware is registered for the symbol-table (no heap) and footprint
# budget checks; NO_STANDALONE_RUN marks firmware that cannot run without a
# peer (e.g. fedrt-fw needs a coordinator), so footprint.py does not run it;
# EXCLUDE_FROM_CHECKS is for the deliberately bad firmware of self-checks.
# FOOTPRINT_LOG names the console log of a real run of such firmware (written
# by its integration test); the footprint report reads its "[mps2] key=N"
# lines (stack_hwm, tls_heap_hwm) from there when the file exists.

set(FEDRT_MPS2_DIR ${CMAKE_CURRENT_LIST_DIR}/../platform/mps2)
set(FEDRT_FOOTPRINT ${CMAKE_CURRENT_LIST_DIR}/../scripts/footprint.py)
get_filename_component(FEDRT_MPS2_DIR ${FEDRT_MPS2_DIR} ABSOLUTE)
if(NOT FEDRT_MPS2_MACHINE)
  message(FATAL_ERROR "firmware build: use a cortex-m toolchain file (toolchains/cortex-m4f.cmake or cortex-m3.cmake)")
endif()
if(NOT FEDRT_CPU_FLAGS MATCHES "-mcpu=cortex-m4")
  set(FEDRT_FW_CPU cortex-m3)
else()
  set(FEDRT_FW_CPU cortex-m4)
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter)


function(fedrt_add_firmware name)
  cmake_parse_arguments(FW "NO_STANDALONE_RUN;EXCLUDE_FROM_CHECKS" "STACK_SIZE;FOOTPRINT_LOG;LAYOUT" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT FW_SOURCES)
    message(FATAL_ERROR "fedrt_add_firmware(${name}): SOURCES is required")
  endif()
  if(NOT FW_STACK_SIZE)
    set(FW_STACK_SIZE 4096)
  endif()
  set(_ld ${FEDRT_MPS2_MACHINE})
  if(FW_LAYOUT)  # large, or a named part (nrf52840): platform/mps2/<machine>-<layout>.ld
    set(_ld ${FEDRT_MPS2_MACHINE}-${FW_LAYOUT})
    if(NOT EXISTS ${FEDRT_MPS2_DIR}/${_ld}.ld)
      message(FATAL_ERROR "fedrt_add_firmware(${name}): LAYOUT ${FW_LAYOUT}: no platform/mps2/${_ld}.ld")
    endif()
  endif()
  add_executable(${name}
    ${FW_SOURCES}
    ${FEDRT_MPS2_DIR}/startup.c
    ${FEDRT_MPS2_DIR}/mps2.c
    ${FEDRT_MPS2_DIR}/provision.c)
  target_include_directories(${name} PRIVATE ${FEDRT_MPS2_DIR})
  # The C library's system calls (_sbrk, _write, ...) are referenced only
  # from newlib's archives, after link-time optimisation has run: the
  # platform's stubs stay ordinary objects so that it cannot drop them.
  set_source_files_properties(${FEDRT_MPS2_DIR}/mps2.c ${FEDRT_MPS2_DIR}/startup.c TARGET_DIRECTORY ${name}
                              PROPERTIES COMPILE_OPTIONS -fno-lto)
  target_link_libraries(${name} PRIVATE fedrt_firmware_config ${FW_LIBRARIES} m)
  target_link_options(${name} PRIVATE
    -L${FEDRT_MPS2_DIR} -T${_ld}.ld
    -Wl,--defsym=__stack_size=${FW_STACK_SIZE}
    -Wl,-Map=$<TARGET_FILE_DIR:${name}>/${name}.map -Wl,--print-memory-usage)
  set_target_properties(${name} PROPERTIES LINK_DEPENDS
    "${FEDRT_MPS2_DIR}/${_ld}.ld;${FEDRT_MPS2_DIR}/mps2-common.ld")
  # Every firmware ELF / those that run to exit without a peer (global
  # properties read by the checks that tests/firmware defers to the end).
  if(FW_EXCLUDE_FROM_CHECKS)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY FEDRT_FIRMWARE_TARGETS ${name})
  set_property(TARGET ${name} PROPERTY FEDRT_FOOTPRINT_LOG "${FW_FOOTPRINT_LOG}")
  if(FW_NO_STANDALONE_RUN)
    set_property(GLOBAL APPEND PROPERTY FEDRT_FIRMWARE_NO_RUN ${name})
  endif()
endfunction()

# What every firmware translation unit sees: device headers in float, Eigen
# without I/O or heap. Firmware is built for size (-Os), where GCC would keep
# Eigen's per-coefficient kernels as out-of-line calls (8 calls per d = 8
# vector operation, ~400 instructions per TD step); forcing Eigen's
# EIGEN_STRONG_INLINE functions inline gives straight-line fixed-size code.
add_library(fedrt_firmware_config INTERFACE)
target_link_libraries(fedrt_firmware_config INTERFACE fedrt_device_headers)
target_compile_definitions(fedrt_firmware_config INTERFACE
  FEDRT_FIRMWARE=1 FEDRT_SCALAR_FLOAT=1 EIGEN_NO_IO EIGEN_NO_MALLOC EIGEN_DONT_VECTORIZE
  "EIGEN_STRONG_INLINE=__attribute__((always_inline)) inline")

# The firmware application (helper C2) and other firmware modules.
include(${CMAKE_CURRENT_LIST_DIR}/firmware_app.cmake OPTIONAL)

if(FEDRT_BUILD_TESTS)
  enable_testing()
  include(${CMAKE_CURRENT_LIST_DIR}/../tests/firmware/firmware_tests.cmake)
endif()
