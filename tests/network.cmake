# Tests of the networked system: loopback integration tests that start real
# fedrt-coordinator / fedrt-device processes (and the tests' own variants of
# them with fault hooks, which the product's binaries do not have).
add_executable(fedrt_net_unit_tests net/network_config_test.cc net/device_state_test.cc)
target_link_libraries(fedrt_net_unit_tests PRIVATE fedrt_net GTest::gtest_main)
gtest_discover_tests(fedrt_net_unit_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

add_executable(fedrt-test-device net/test_device.cc)
target_link_libraries(fedrt-test-device PRIVATE fedrt_net CLI11::CLI11)
add_executable(fedrt-test-coordinator net/test_coordinator.cc)
target_link_libraries(fedrt-test-coordinator PRIVATE fedrt_net CLI11::CLI11)
set_target_properties(fedrt-test-device fedrt-test-coordinator PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)

add_executable(fedrt_net_integration_tests net/fleet_test.cc net/family_fleet_test.cc net/refusal_test.cc net/security_test.cc net/bad_input_test.cc
  net/compressed_fleet_test.cc net/secagg_fleet_test.cc net/own_data_test.cc net/own_transitions_test.cc
  net/softmax_fleet_test.cc net/digits_example_test.cc)
target_link_libraries(fedrt_net_integration_tests PRIVATE fedrt_net fedrt_sim GTest::gtest_main)
target_compile_definitions(fedrt_net_integration_tests PRIVATE
  FEDRT_BIN_DIR="$<TARGET_FILE_DIR:fedrt-coordinator>"
  FEDRT_TEST_BIN_DIR="$<TARGET_FILE_DIR:fedrt-test-device>"
  FEDRT_NET_TMP="${CMAKE_CURRENT_BINARY_DIR}/net_tmp"
  FEDRT_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data"
  FEDRT_EXAMPLES_DIR="${PROJECT_SOURCE_DIR}/examples")
add_dependencies(fedrt_net_integration_tests fedrt-coordinator fedrt-device fedrt-keys fedrt-sim
  fedrt-test-device fedrt-test-coordinator)
# Under a second each (run in the sanitizer pass too): security refusals, unsampled update.
set(FEDRT_NET_FAST "SecurityTest.*:NetTest.DeviceWith*:NetTest.UpdateFromUnsampledDeviceIsRejected:NetTest.CompressedDownlinkIsRefusedByTheCoordinator:SecAggFleetTest.CoordinatorRefusesSecureAggregationSettingsItCannotRun")
gtest_discover_tests(fedrt_net_integration_tests TEST_FILTER "${FEDRT_NET_FAST}"
  PROPERTIES LABELS integration TIMEOUT 180 DISCOVERY_TIMEOUT 60)
# Fleets of processes over several seconds (equivalence, faults, bad input):
# labelled statistical so the sanitizer pass skips them (team rule: > 2 s).
gtest_discover_tests(fedrt_net_integration_tests TEST_FILTER "-${FEDRT_NET_FAST}"
  PROPERTIES LABELS statistical TIMEOUT 180 DISCOVERY_TIMEOUT 60)

# Tests of the wire module (runtime/wire, runtime/include/fedrt/wire): frames,
# codec round trips and rejections, and the nanopb bounds against config/limits.h.
include(${CMAKE_CURRENT_LIST_DIR}/wire.cmake)
