# Tests of secure aggregation.
add_executable(fedrt_secagg_tests
  secagg/crypto_kat_test.cc
  secagg/shamir_test.cc
  secagg/shamir_decode_test.cc
  secagg/cheater_test.cc
  secagg/consistency_test.cc
  secagg/protocol_test.cc
  secagg/privacy_test.cc)
target_link_libraries(fedrt_secagg_tests PRIVATE fedrt_test_support GTest::gtest_main)
gtest_discover_tests(fedrt_secagg_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# secure_aggregation = true in the simulator (a few seconds: X25519 costs ~0.75 ms of CPU).
add_executable(fedrt_secagg_sim_tests secagg/sim_secagg_test.cc)
target_link_libraries(fedrt_secagg_sim_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_secagg_sim_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# Heap use of one device round (mbedTLS bignum only; no leak). Replaces malloc:
# not under the sanitizers.
if(NOT FEDRT_SANITIZE)
  add_executable(secagg_device_heap_test secagg/device_heap_test.cc)
  target_link_libraries(secagg_device_heap_test PRIVATE fedrt_test_support)
  add_test(NAME secagg_device_heap COMMAND secagg_device_heap_test)
  add_test(NAME secagg_device_heap_detects_leak COMMAND secagg_device_heap_test --self-check)
  set_tests_properties(secagg_device_heap secagg_device_heap_detects_leak PROPERTIES LABELS device)
  set_tests_properties(secagg_device_heap_detects_leak PROPERTIES WILL_FAIL TRUE)
endif()

# Bad secure-aggregation settings in an experiment file: exit 2 and a message naming the setting.
function(fedrt_secagg_fails name regex file)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND}
                   "-DCMD=$<TARGET_FILE:fedrt-sim>;--config;${CMAKE_CURRENT_SOURCE_DIR}/secagg/data/${file};--no-plot;--local-steps;1;--out;${CMAKE_CURRENT_BINARY_DIR}/out_${name}"
                   "-DREGEX=${regex}" -DEXPECT_RC=2 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.cmake)
  set_tests_properties(${name} PROPERTIES LABELS cli TIMEOUT 60)
endfunction()
fedrt_secagg_fails(secagg_bad_quantizer "secure_aggregation needs the shared-scale stochastic rounding quantizer" secagg_dither.toml)
fedrt_secagg_fails(secagg_bad_wrap "1000 agents x 24-bit inputs can wrap Z_.2.32." secagg_wrap.toml)
fedrt_secagg_fails(secagg_bad_type "compression.secure_aggregation" secagg_wrong_type.toml)
fedrt_secagg_fails(secagg_bad_dropout_alone "need compression.secure_aggregation = true" secagg_dropout_without.toml)
fedrt_secagg_fails(secagg_bad_neighbours "secagg_neighbours must be 0 .automatic. or an even number" secagg_odd_neighbours.toml)
