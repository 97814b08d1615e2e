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
