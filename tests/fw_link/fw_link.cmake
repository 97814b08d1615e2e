# Firmware link tests (issue 6), host presets: device-side validation unit
# tests, and the firmware's protocol client (fedrt-fw-host, the same code and
# mbedTLS/nanopb build as fedrt-fw) against the real coordinator through a
# misbehaving link (fw-link-relay): a corrupted TLS record and an undecodable
# + oversized frame are rejected with a status and the federation completes.
# The same scenarios under qemu-system-arm with fedrt-fw are registered by the
# cortex-m presets (cmake/firmware_app.cmake).
add_executable(fw_problem_image_test ${CMAKE_CURRENT_LIST_DIR}/problem_image_test.cc)
target_link_libraries(fw_problem_image_test PRIVATE fedrt_device_headers GTest::gtest_main)
gtest_discover_tests(fw_problem_image_test PROPERTIES LABELS device DISCOVERY_TIMEOUT 60)

if(TARGET fedrt_net)  # also used by the cortex-m presets' QEMU link tests
  add_executable(fw-link-relay ${CMAKE_CURRENT_LIST_DIR}/fw_link_relay.cc)
  target_link_libraries(fw-link-relay PRIVATE fedrt_net CLI11::CLI11)
endif()
if(TARGET fedrt-fw-host)
  foreach(mode corrupt-record bad-frames huge-frame)
    add_test(NAME fw_link_host_${mode}
             COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_fw_link.sh --bin ${CMAKE_BINARY_DIR}/bin
                     --out ${CMAKE_BINARY_DIR}/fw_link/host-${mode} --fw 1 --native 1 --mode ${mode})
    set_tests_properties(fw_link_host_${mode} PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77
                         TIMEOUT 300)
  endforeach()
  add_test(NAME fw_link_host_dither
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_fw_link.sh --bin ${CMAKE_BINARY_DIR}/bin
                   --out ${CMAKE_BINARY_DIR}/fw_link/host-dither --fw 2 --native 1
                   --config ${CMAKE_CURRENT_LIST_DIR}/experiment_dither.toml)
  set_tests_properties(fw_link_host_dither PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 300)
  # Secure aggregation (issue 7): the firmware client in SecAgg+ rounds equals the plain run.
  add_test(NAME fw_link_host_secagg
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_fw_secagg.sh --bin ${CMAKE_BINARY_DIR}/bin
                   --out ${CMAKE_BINARY_DIR}/fw_link/host-secagg --fw 2 --native 2)
  set_tests_properties(fw_link_host_secagg PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
