# Tests of the networked system: loopback integration tests that start real
# fedrt-coordinator / fedrt-device processes (and the tests' own variants of
# them with fault hooks, which the product's binaries do not have).
add_executable(fedrt_net_unit_tests net/network_config_test.cc net/device_state_test.cc net/state_store_test.cc
  net/revocations_test.cc net/fleet_monitor_test.cc net/refusal_log_test.cc net/peer_rate_limit_test.cc
  net/secret_bytes_test.cc net/tls_buffers_test.cc net/admission_test.cc net/serial_line_test.cc)
target_link_libraries(fedrt_net_unit_tests PRIVATE fedrt_net GTest::gtest_main)
gtest_discover_tests(fedrt_net_unit_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# The fleet's admin programs as an operator runs them: fedrt-keys (new fleet,
# add, revoke) and fedrt-status on a state file. Under a second each.
add_executable(fedrt_admin_cli_tests net/keys_cli_test.cc net/status_cli_test.cc)
target_link_libraries(fedrt_admin_cli_tests PRIVATE fedrt_net nlohmann_json::nlohmann_json GTest::gtest_main)
target_compile_definitions(fedrt_admin_cli_tests PRIVATE
  FEDRT_BIN_DIR="$<TARGET_FILE_DIR:fedrt-keys>"
  FEDRT_ADMIN_TMP="${CMAKE_CURRENT_BINARY_DIR}/admin_tmp")
add_dependencies(fedrt_admin_cli_tests fedrt-keys fedrt-status)
gtest_discover_tests(fedrt_admin_cli_tests PROPERTIES LABELS cli TIMEOUT 60 DISCOVERY_TIMEOUT 60)

add_executable(fedrt-test-device net/test_device.cc)
target_link_libraries(fedrt-test-device PRIVATE fedrt_net CLI11::CLI11)
add_executable(fedrt-test-coordinator net/test_coordinator.cc)
target_link_libraries(fedrt-test-coordinator PRIVATE fedrt_net fedrt_test_faults CLI11::CLI11)
set_target_properties(fedrt-test-device fedrt-test-coordinator PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)

add_executable(fedrt_net_integration_tests net/fleet_test.cc net/family_fleet_test.cc net/refusal_test.cc net/security_test.cc net/bad_input_test.cc
  net/compressed_fleet_test.cc net/secagg_fleet_test.cc net/own_data_test.cc net/own_transitions_test.cc
  net/softmax_fleet_test.cc net/digits_example_test.cc net/own_gmm_test.cc net/chunked_fleet_test.cc
  net/generated_blind_test.cc net/http_test.cc net/keys_live_test.cc net/refusal_flood_test.cc
  net/idle_timeout_test.cc net/exit_codes_test.cc net/coordinator_bad_shard_test.cc net/privacy_fleet_test.cc
  net/privacy_dist_fleet_test.cc net/poison_test.cc net/state_rollback_test.cc net/bounds_test.cc
  net/http_bounds_test.cc net/gateway_fleet_test.cc net/async_fleet_test.cc)
target_link_libraries(fedrt_net_integration_tests PRIVATE fedrt_net fedrt_sim GTest::gtest_main)
target_compile_definitions(fedrt_net_integration_tests PRIVATE
  FEDRT_BIN_DIR="$<TARGET_FILE_DIR:fedrt-coordinator>"
  FEDRT_TEST_BIN_DIR="$<TARGET_FILE_DIR:fedrt-test-device>"
  FEDRT_NET_TMP="${CMAKE_CURRENT_BINARY_DIR}/net_tmp"
  FEDRT_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data"
  FEDRT_EXAMPLES_DIR="${PROJECT_SOURCE_DIR}/examples")
add_dependencies(fedrt_net_integration_tests fedrt-coordinator fedrt-gateway fedrt-device fedrt-keys fedrt-sim
  fedrt-test-device fedrt-test-coordinator)
# Under a second each (run in the sanitizer pass too): security refusals, unsampled update.
set(FEDRT_NET_FAST "SecurityTest.*:HttpTest.*:HttpBoundsTest.*:HttpToken.*:NetTest.FloodOf*:NetTest.FloodFrom*:NetTest.IdleHalfOpen*:NetTest.ConnectionsBeyond*:NetTest.DeviceWith*:NetTest.UpdateFromUnsampledDeviceIsRejected:NetTest.CompressedDownlinkIsRefusedByTheCoordinator:NetTest.PrivacyBudgetBelowOneRoundIsRefusedByTheCoordinator:SecAggFleetTest.CoordinatorRefusesSecureAggregationSettingsItCannotRun")
gtest_discover_tests(fedrt_net_integration_tests TEST_FILTER "${FEDRT_NET_FAST}"
  PROPERTIES LABELS integration TIMEOUT 180 DISCOVERY_TIMEOUT 60)
# The small fleet of `./fedrt test --quick` (docs/testing.md): a coordinator and
# 20 devices over TLS, 20 rounds each against the simulator, in about a second.
set(FEDRT_NET_QUICK "NetTest.FleetMatchesSimulatorEveryRound")
gtest_discover_tests(fedrt_net_integration_tests TEST_FILTER "${FEDRT_NET_QUICK}"
  PROPERTIES LABELS "integration;quick" TIMEOUT 180 DISCOVERY_TIMEOUT 60)
# Fleets of processes over several seconds (equivalence, faults, bad input):
# labelled statistical so the sanitizer pass skips them (team rule: > 2 s).
gtest_discover_tests(fedrt_net_integration_tests TEST_FILTER "-${FEDRT_NET_FAST}:${FEDRT_NET_QUICK}"
  PROPERTIES LABELS statistical TIMEOUT 180 DISCOVERY_TIMEOUT 60)

# fedrt-swarm (a bench program, bench/fedrt_swarm.cc): 200 devices in one
# process behind two gateways and flat, each against the simulator (about a second each).
if(FEDRT_BUILD_BENCH)
  add_executable(fedrt_swarm_tests net/swarm_fleet_test.cc)
  target_link_libraries(fedrt_swarm_tests PRIVATE fedrt_net fedrt_sim GTest::gtest_main)
  target_compile_definitions(fedrt_swarm_tests PRIVATE
    FEDRT_BIN_DIR="$<TARGET_FILE_DIR:fedrt-coordinator>"
    FEDRT_TEST_BIN_DIR="$<TARGET_FILE_DIR:fedrt-test-device>"
    FEDRT_NET_TMP="${CMAKE_CURRENT_BINARY_DIR}/net_tmp")
  add_dependencies(fedrt_swarm_tests fedrt-coordinator fedrt-gateway fedrt-swarm fedrt-keys fedrt-sim)
  gtest_discover_tests(fedrt_swarm_tests PROPERTIES LABELS integration TIMEOUT 180 DISCOVERY_TIMEOUT 60)
endif()

# Tests of the wire module (runtime/wire, runtime/include/fedrt/wire): frames,
# codec round trips and rejections, and the nanopb bounds against task/limits.h.
include(${CMAKE_CURRENT_LIST_DIR}/wire.cmake)

# fedrt::Device (the C++ device API) against a real coordinator on loopback.
add_executable(fedrt_device_api_tests net/device_api_test.cc)
target_link_libraries(fedrt_device_api_tests PRIVATE fedrt_net fedrt_sim GTest::gtest_main)
target_compile_definitions(fedrt_device_api_tests PRIVATE
  FEDRT_BIN_DIR="$<TARGET_FILE_DIR:fedrt-coordinator>"
  FEDRT_TEST_BIN_DIR="$<TARGET_FILE_DIR:fedrt-test-device>"
  FEDRT_NET_TMP="${CMAKE_CURRENT_BINARY_DIR}/net_tmp")
add_dependencies(fedrt_device_api_tests fedrt-coordinator fedrt-device fedrt-keys fedrt-sim)
gtest_discover_tests(fedrt_device_api_tests TEST_FILTER "DeviceApiTest.BadConfig*"
  PROPERTIES LABELS integration TIMEOUT 180 DISCOVERY_TIMEOUT 60)
gtest_discover_tests(fedrt_device_api_tests TEST_FILTER "-DeviceApiTest.BadConfig*"
  PROPERTIES LABELS statistical TIMEOUT 180 DISCOVERY_TIMEOUT 60)

# The user-model example (examples/user-model): six fedrt::Device objects in
# one process train a two-layer network over TLS; its training loss must fall
# below half its first value, block of 5 rounds by block (run.sh --check).
add_test(NAME example_user_model_loss_falls
  COMMAND ${PROJECT_SOURCE_DIR}/examples/user-model/run.sh --bin $<TARGET_FILE_DIR:fedrt-coordinator>
          --out ${CMAKE_CURRENT_BINARY_DIR}/example_user_model --check)
set_tests_properties(example_user_model_loss_falls PROPERTIES LABELS integration TIMEOUT 180)

# fedrt/user_model.h must stay a C99 header: a C model against its typedef,
# compiled as strict C99 with every build of the tests.
add_library(fedrt_user_model_c99_check OBJECT device/user_model_c99.c)
target_include_directories(fedrt_user_model_c99_check PRIVATE ${PROJECT_SOURCE_DIR}/runtime/include)
set_target_properties(fedrt_user_model_c99_check PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(fedrt_user_model_c99_check PRIVATE -Wall -Wextra -pedantic -Werror)

# Abuse limits (issue 19; docs/dashboard.md, "Connection limits"): 50 devices
# train through a handshake flood and 300 slow connections with results equal
# to a quiet run's, refusals logged at a bounded rate, memory within the cap.
add_test(NAME abuse_honest_devices_train_through_a_flood
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/net/abuse_test.py
          --bin $<TARGET_FILE_DIR:fedrt-coordinator> --out ${CMAKE_CURRENT_BINARY_DIR}/abuse)
set_tests_properties(abuse_honest_devices_train_through_a_flood PROPERTIES LABELS statistical TIMEOUT 300)

# Crash torture (issue 19; docs/fleet.md, "Deployment on a real network"): the coordinator
# SIGKILLed 10 times at random moments, inside and right after round commits,
# and devices killed 10 times, end with the undisturbed run's rounds, iterates,
# metrics and device states. `./fedrt bench` runs it with 100 kills of each.
add_test(NAME crash_torture_same_results_as_undisturbed
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/net/crash_torture.py
          --bin $<TARGET_FILE_DIR:fedrt-coordinator> --test-bin $<TARGET_FILE_DIR:fedrt-test-coordinator>
          --out ${CMAKE_CURRENT_BINARY_DIR}/crash_torture --kills 10 --device-kills 10)
set_tests_properties(crash_torture_same_results_as_undisturbed PROPERTIES LABELS integration TIMEOUT 300)

# TLS as `openssl s_client` sees it (docs/security.md, "TLS"): TLS 1.3 with
# X25519 then P-256, certificates and PSK; TLS 1.2 only while tls_min_version allows it.
add_test(NAME tls_as_openssl_sees_it
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/net/tls_openssl_test.py
          --bin $<TARGET_FILE_DIR:fedrt-coordinator> --out ${CMAKE_CURRENT_BINARY_DIR}/tls_openssl)
set_tests_properties(tls_as_openssl_sees_it PROPERTIES LABELS integration TIMEOUT 120)

# The dashboard in a real browser (docs/dashboard.md): headless Chromium
# through WebDriver follows a live fleet's round counter and devices table,
# saves a screenshot, and /metrics is parsed by the Prometheus client's parser.
find_program(FEDRT_CHROMEDRIVER chromedriver)
if(FEDRT_CHROMEDRIVER AND EXISTS /usr/bin/python3)
  add_test(NAME dashboard_follows_the_run
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/dashboard/dashboard_test.py
            --bin $<TARGET_FILE_DIR:fedrt-coordinator> --test-bin $<TARGET_FILE_DIR:fedrt-test-device>
            --out ${CMAKE_CURRENT_BINARY_DIR}/dashboard)
  set_tests_properties(dashboard_follows_the_run PROPERTIES LABELS statistical TIMEOUT 240)
else()
  add_test(NAME dashboard_follows_the_run COMMAND ${CMAKE_COMMAND} -E echo
    "chromedriver or /usr/bin/python3 missing: install chromium chromium-driver python3-selenium (./fedrt setup)")
  set_tests_properties(dashboard_follows_the_run PROPERTIES LABELS statistical WILL_FAIL TRUE)
endif()
