# Firmware tests, run by ctest under qemu-system-arm (label "device").
# Included from cmake/firmware.cmake in the cortex-m presets.

set(FEDRT_FW_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(FEDRT_FW_RUN ${FEDRT_MPS2_DIR}/qemu-run.sh --machine ${FEDRT_MPS2_MACHINE})

fedrt_add_firmware(fw_platform_test SOURCES ${FEDRT_FW_TEST_DIR}/platform_test.cc)
target_include_directories(fw_platform_test PRIVATE ${FEDRT_FW_TEST_DIR})
add_test(NAME fw_platform_no_blob COMMAND fw_platform_test)

# The same firmware with a provisioning blob loaded by QEMU.
set(_blob ${CMAKE_BINARY_DIR}/fw_test_provision.bin)
add_test(NAME fw_provision_blob_make
  COMMAND ${Python3_EXECUTABLE} ${FEDRT_MPS2_DIR}/make_provision.py --out ${_blob} --index 7 --id fw-test-7
          --psk-hex 000102030405060708090a0b0c0d0e0f
          --seed-hex a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf
          --experiment-seed 1234567890123)
set_tests_properties(fw_provision_blob_make PROPERTIES FIXTURES_SETUP fw_blob)
add_test(NAME fw_platform_with_blob
  COMMAND ${FEDRT_FW_RUN} --provision ${_blob} $<TARGET_FILE:fw_platform_test> --expect-provision)
set_tests_properties(fw_platform_with_blob PROPERTIES FIXTURES_REQUIRED fw_blob)

set_tests_properties(fw_platform_no_blob fw_provision_blob_make fw_platform_with_blob
  PROPERTIES LABELS device TIMEOUT 120)

# Device cores on the target: in float against host-computed values, and the
# exact sums against ExactSum (exact_sum), the distributed DP codec against
# the host's integers (ddg).
foreach(t lsa rng codec exact_sum ddg)
  fedrt_add_firmware(fw_${t}_test SOURCES ${FEDRT_FW_TEST_DIR}/${t}_test.cc)
  target_include_directories(fw_${t}_test PRIVATE ${FEDRT_FW_TEST_DIR})
  add_test(NAME fw_${t}_test COMMAND fw_${t}_test)
  set_tests_properties(fw_${t}_test PROPERTIES LABELS device TIMEOUT 120)
endforeach()

# Cost of one local TD(0) step (d = 8) in instructions, under -icount shift=0;
# the firmware fails when it exceeds the budget of this CPU in budget.json.
fedrt_add_firmware(fedrt-td-step-bench SOURCES ${FEDRT_FW_TEST_DIR}/td_step_bench.cc)
file(READ ${FEDRT_MPS2_DIR}/budget.json _budget)
string(JSON _step_budget ERROR_VARIABLE _no_budget GET "${_budget}" td_step_instructions ${FEDRT_FW_CPU})
if(NOT _no_budget)
  target_compile_definitions(fedrt-td-step-bench PRIVATE FEDRT_TD_STEP_BUDGET=${_step_budget}u)
endif()
set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${FEDRT_MPS2_DIR}/budget.json)
add_test(NAME fw_td_step_cost COMMAND ${FEDRT_FW_RUN} --icount --timeout 300 $<TARGET_FILE:fedrt-td-step-bench>)
set_tests_properties(fw_td_step_cost PROPERTIES LABELS device TIMEOUT 320)
# The same step on the Eigen::Dynamic kernel, which fedrt-fw-lsa runs for
# every d but 8 (FEDRT_UNROLLED_DIM): reported, no budget.
fedrt_add_firmware(fedrt-td-step-bench-dynamic SOURCES ${FEDRT_FW_TEST_DIR}/td_step_bench.cc)
target_compile_definitions(fedrt-td-step-bench-dynamic PRIVATE FEDRT_TD_STEP_DYNAMIC)
add_test(NAME fw_td_step_cost_dynamic COMMAND ${FEDRT_FW_RUN} --icount --timeout 300
         $<TARGET_FILE:fedrt-td-step-bench-dynamic>)
set_tests_properties(fw_td_step_cost_dynamic PROPERTIES LABELS device TIMEOUT 320)

# Heap-symbol self-check: a firmware that calls malloc must be caught.
fedrt_add_firmware(fw_heap_canary SOURCES ${FEDRT_FW_TEST_DIR}/heap_canary.c EXCLUDE_FROM_CHECKS)
add_test(NAME fw_no_heap_check_detects_malloc
  COMMAND ${Python3_EXECUTABLE} ${FEDRT_FOOTPRINT} --no-heap $<TARGET_FILE:fw_heap_canary>)
# Passes only on the check's own finding (not on any failure, e.g. a missing ELF).
set_tests_properties(fw_no_heap_check_detects_malloc PROPERTIES LABELS device
  PASS_REGULAR_EXPRESSION "FAIL fw_heap_canary: heap symbols linked: [^\n]*malloc")

# Checks over every firmware ELF of the build (fedrt_add_firmware registers
# them; deferred so firmware added after this file is included is covered):
# no heap symbols, and every section within platform/mps2/budget.json.
function(_fedrt_firmware_checks)
  get_property(_fws GLOBAL PROPERTY FEDRT_FIRMWARE_TARGETS)
  get_property(_norun GLOBAL PROPERTY FEDRT_FIRMWARE_NO_RUN)
  set(_elfs "")
  foreach(fw IN LISTS _fws)
    list(APPEND _elfs $<TARGET_FILE:${fw}>)
  endforeach()
  set(_skip "")
  foreach(fw IN LISTS _norun)
    list(APPEND _skip --skip-run ${fw})
  endforeach()
  # The list for ./fedrt bench (scripts/footprint.py --manifest).
  set(_entries "")
  foreach(fw IN LISTS _fws)
    if(fw IN_LIST _norun)
      set(_run false)
    else()
      set(_run true)
    endif()
    get_property(_log TARGET ${fw} PROPERTY FEDRT_FOOTPRINT_LOG)
    list(APPEND _entries "    {\"name\": \"${fw}\", \"elf\": \"$<TARGET_FILE:${fw}>\", \"run\": ${_run}, \"log\": \"${_log}\"}")
  endforeach()
  list(JOIN _entries ",\n" _entries)
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/firmware_manifest.json CONTENT
    "{\n  \"machine\": \"${FEDRT_MPS2_MACHINE}\",\n  \"cpu\": \"${FEDRT_FW_CPU}\",\n  \"firmware\": [\n${_entries}\n  ]\n}\n")
  add_test(NAME fw_no_heap_symbols COMMAND ${Python3_EXECUTABLE} ${FEDRT_FOOTPRINT} --no-heap ${_elfs})
  add_test(NAME fw_footprint_budget
    COMMAND ${Python3_EXECUTABLE} ${FEDRT_FOOTPRINT} --check --run ${FEDRT_MPS2_MACHINE} ${_skip} ${_elfs})
  set_tests_properties(fw_no_heap_symbols fw_footprint_budget PROPERTIES LABELS device TIMEOUT 600)
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _fedrt_firmware_checks)

# UART1 through QEMU to a TCP peer on the host (the coordinator link's transport).
fedrt_add_firmware(fw_uart_link_test SOURCES ${FEDRT_FW_TEST_DIR}/uart_link_test.cc NO_STANDALONE_RUN)
target_include_directories(fw_uart_link_test PRIVATE ${FEDRT_FW_TEST_DIR})
add_test(NAME fw_uart_link
  COMMAND ${Python3_EXECUTABLE} ${FEDRT_FW_TEST_DIR}/uart_link_peer.py ${FEDRT_FW_RUN} $<TARGET_FILE:fw_uart_link_test>)
set_tests_properties(fw_uart_link PROPERTIES LABELS device TIMEOUT 120)

# A fault ends the run with the panic message and exit code 3 (not a hang:
# a timeout would give 124).
fedrt_add_firmware(fw_fault_test SOURCES ${FEDRT_FW_TEST_DIR}/fault_test.c EXCLUDE_FROM_CHECKS)
add_test(NAME fw_fault_exits_with_3
  COMMAND sh -c "\"$@\"; rc=$?; echo \"exit code $rc\"; test $rc -eq 3" sh
          ${FEDRT_FW_RUN} --timeout 30 $<TARGET_FILE:fw_fault_test>)
set_tests_properties(fw_fault_exits_with_3 PROPERTIES LABELS device TIMEOUT 60
  FAIL_REGULAR_EXPRESSION "did not exit")

# make_provision.py names what is wrong with its input.
add_test(NAME fw_provision_rejects_bad_psk
  COMMAND ${Python3_EXECUTABLE} ${FEDRT_MPS2_DIR}/make_provision.py --out ${CMAKE_BINARY_DIR}/bad.bin
          --index 1 --id dev-1 --psk-hex 0g)
add_test(NAME fw_provision_rejects_long_id
  COMMAND ${Python3_EXECUTABLE} ${FEDRT_MPS2_DIR}/make_provision.py --out ${CMAKE_BINARY_DIR}/bad.bin
          --index 1 --id dev-0123456789012345678901234567890 --psk-hex 00)
set_tests_properties(fw_provision_rejects_bad_psk PROPERTIES LABELS device
  PASS_REGULAR_EXPRESSION "--psk-hex is not hex")
set_tests_properties(fw_provision_rejects_long_id PROPERTIES LABELS device
  PASS_REGULAR_EXPRESSION "device id must be 1..32 bytes, got 35")

# The time base is monotonic over many SysTick wraps, and an idle UART wait
# (WFI on the RX interrupt) still times out.
# NO_STANDALONE_RUN: the footprint run (-icount) would take minutes for its 3 s of busy reads.
fedrt_add_firmware(fw_time_test SOURCES ${FEDRT_FW_TEST_DIR}/time_test.cc NO_STANDALONE_RUN)
target_include_directories(fw_time_test PRIVATE ${FEDRT_FW_TEST_DIR})
add_test(NAME fw_time_test COMMAND fw_time_test)
set_tests_properties(fw_time_test PROPERTIES LABELS device TIMEOUT 120)

# qemu-run.sh passes SIGTERM on to QEMU, and a firmware waiting on its UART
# sleeps (WFI) instead of spinning a host core.
add_test(NAME fw_qemu_run_signal_idle
  COMMAND ${Python3_EXECUTABLE} ${FEDRT_FW_TEST_DIR}/qemu_signal_test.py ${FEDRT_FW_RUN} --timeout 60
          $<TARGET_FILE:fw_uart_link_test>)
set_tests_properties(fw_qemu_run_signal_idle PROPERTIES LABELS device TIMEOUT 60 PASS_REGULAR_EXPRESSION "PASS")

# SecAgg+ on the device: one device's full round for n = 10, 100,
# 1000 (k up to 54), instructions per phase under -icount, outputs bit-equal
# to the host's SecAggDevice. Needs the fetched mbedTLS (cmake/firmware_app.cmake).
if(TARGET fedrt_fw_mbedtls)
  add_library(fedrt_fw_secagg STATIC
    ${CMAKE_SOURCE_DIR}/runtime/src/secagg/crypto.cc
    ${CMAKE_SOURCE_DIR}/runtime/src/secagg/protocol.cc
    ${CMAKE_SOURCE_DIR}/runtime/src/secagg/device.cc)
  target_link_libraries(fedrt_fw_secagg PUBLIC fedrt_firmware_config fedrt_fw_mbedtls fedrt_fw_x25519)
  # k = 54 for n = 1000 (DefaultGraph): tables for 54 neighbours, not 64.
  target_compile_definitions(fedrt_fw_secagg PUBLIC FEDRT_SECAGG_MAX_NEIGHBOURS=54)
  fedrt_add_firmware(fedrt-fw-secagg-bench SOURCES ${FEDRT_FW_TEST_DIR}/secagg_bench.cc
    STACK_SIZE 5120 LIBRARIES fedrt_fw_secagg)
  target_include_directories(fedrt-fw-secagg-bench PRIVATE ${FEDRT_FW_TEST_DIR})
  add_test(NAME fw_secagg_round COMMAND ${FEDRT_FW_RUN} --icount --timeout 600 $<TARGET_FILE:fedrt-fw-secagg-bench>)
  set_tests_properties(fw_secagg_round PROPERTIES LABELS device TIMEOUT 620 PASS_REGULAR_EXPRESSION "host=equal")
endif()

# Cost of a device's distributed DP encoding (rotation, conditional rounding,
# discrete Gaussian) in instructions per coordinate, under -icount.
# (ChaCha20 keystream: the SecAgg+ crypto library.)
if(TARGET fedrt_fw_secagg)
  fedrt_add_firmware(fedrt-fw-ddg-bench SOURCES ${FEDRT_FW_TEST_DIR}/ddg_bench.cc LIBRARIES fedrt_fw_secagg)
  add_test(NAME fw_ddg_cost COMMAND ${FEDRT_FW_RUN} --icount --timeout 300 $<TARGET_FILE:fedrt-fw-ddg-bench>)
  set_tests_properties(fw_ddg_cost PROPERTIES LABELS device TIMEOUT 320
    PASS_REGULAR_EXPRESSION "ddg_bench: encoding .* instructions per coordinate")
endif()

# What forward secrecy costs the device: a TLS 1.3 psk_ke and a psk_dhe_ke
# handshake in one image (client and server in memory), client instructions
# under -icount. mbedTLS here is the firmware's TLS 1.3 configuration with
# the ref10 X25519 (cmake/fw_mbedtls.cmake) plus psk_ke and a server
# (tests/firmware/tls_kex_mbedtls_config.h); the product images keep theirs.
if(TARGET fedrt_fw_mbedtls)
  include(${CMAKE_SOURCE_DIR}/cmake/fw_mbedtls.cmake)
  fedrt_fw_mbedtls_library(fedrt_fw_mbedtls_kex tls_kex_mbedtls_config.h ${FEDRT_FW_TEST_DIR})
  target_link_libraries(fedrt_fw_mbedtls_kex PUBLIC fedrt_firmware_config)
  fedrt_add_firmware(fedrt-fw-tls-kex-bench SOURCES ${FEDRT_FW_TEST_DIR}/tls_kex_bench.cc
    STACK_SIZE 8192 LIBRARIES fedrt_fw_mbedtls_kex)
  add_test(NAME fw_tls_kex_cost COMMAND ${FEDRT_FW_RUN} --icount --timeout 300 $<TARGET_FILE:fedrt-fw-tls-kex-bench>)
  set_tests_properties(fw_tls_kex_cost PROPERTIES LABELS device TIMEOUT 320 PASS_REGULAR_EXPRESSION "tls-kex-bench: PASS")
endif()
