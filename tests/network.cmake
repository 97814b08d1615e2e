# Tests of the networked system (issue 5): wire unit tests, and loopback
# integration tests that start real fedrt-coordinator / fedrt-device processes.
add_executable(fedrt_net_unit_tests net/wire_test.cc)
target_link_libraries(fedrt_net_unit_tests PRIVATE fedrt_net GTest::gtest_main)
gtest_discover_tests(fedrt_net_unit_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

add_executable(fedrt_net_integration_tests net/fleet_test.cc net/security_test.cc net/bad_input_test.cc
  net/compressed_fleet_test.cc net/secagg_fleet_test.cc)
target_link_libraries(fedrt_net_integration_tests PRIVATE fedrt_net GTest::gtest_main)
target_compile_definitions(fedrt_net_integration_tests PRIVATE
  FEDRT_BIN_DIR="$<TARGET_FILE_DIR:fedrt-coordinator>"
  FEDRT_NET_TMP="${CMAKE_CURRENT_BINARY_DIR}/net_tmp")
add_dependencies(fedrt_net_integration_tests fedrt-coordinator fedrt-device fedrt-keys)
# Under a second each (run in the sanitizer pass too): security refusals, unsampled update.
set(FEDRT_NET_FAST "SecurityTest.*:NetTest.UpdateFromUnsampledDeviceIsRejected:NetTest.CompressedDownlinkIsRefusedByTheCoordinator:SecAggFleetTest.CoordinatorRefusesSecureAggregationSettingsItCannotRun")
gtest_discover_tests(fedrt_net_integration_tests TEST_FILTER "${FEDRT_NET_FAST}"
  PROPERTIES LABELS integration TIMEOUT 180 DISCOVERY_TIMEOUT 60)
# Fleets of processes over several seconds (equivalence, faults, bad input):
# labelled statistical so the sanitizer pass skips them (team rule: > 2 s).
gtest_discover_tests(fedrt_net_integration_tests TEST_FILTER "-${FEDRT_NET_FAST}"
  PROPERTIES LABELS statistical TIMEOUT 180 DISCOVERY_TIMEOUT 60)
