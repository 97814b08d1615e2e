# Tests of secure aggregation (issue 7).
add_executable(fedrt_secagg_tests
  secagg/crypto_kat_test.cc
  secagg/shamir_test.cc
  secagg/protocol_test.cc
  secagg/privacy_test.cc)
target_link_libraries(fedrt_secagg_tests PRIVATE fedrt_secagg GTest::gtest_main)
gtest_discover_tests(fedrt_secagg_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# secure_aggregation = true in the simulator (a few seconds: X25519 costs ~0.75 ms of CPU).
add_executable(fedrt_secagg_sim_tests secagg/sim_secagg_test.cc)
target_link_libraries(fedrt_secagg_sim_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_secagg_sim_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# Heap use of one device round (mbedTLS bignum only; no leak). Replaces malloc:
# not under the sanitizers.
if(NOT FEDRT_SANITIZE)
  add_executable(secagg_device_heap_test secagg/device_heap_test.cc)
  target_link_libraries(secagg_device_heap_test PRIVATE fedrt_secagg)
  add_test(NAME secagg_device_heap COMMAND secagg_device_heap_test)
  add_test(NAME secagg_device_heap_detects_leak COMMAND secagg_device_heap_test --self-check)
  set_tests_properties(secagg_device_heap secagg_device_heap_detects_leak PROPERTIES LABELS device)
  set_tests_properties(secagg_device_heap_detects_leak PROPERTIES WILL_FAIL TRUE)
endif()
