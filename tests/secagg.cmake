# Tests of secure aggregation (issue 7).
add_executable(fedrt_secagg_tests
  secagg/crypto_kat_test.cc
  secagg/shamir_test.cc
  secagg/protocol_test.cc
  secagg/privacy_test.cc)
target_link_libraries(fedrt_secagg_tests PRIVATE fedrt_secagg GTest::gtest_main)
gtest_discover_tests(fedrt_secagg_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# secure_aggregation = true in the simulator (a few seconds: X25519 costs ~1.5 ms).
add_executable(fedrt_secagg_sim_tests secagg/sim_secagg_test.cc)
target_link_libraries(fedrt_secagg_sim_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_secagg_sim_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
