# Tests of the round protocol module (runtime/include/fedrt/protocol) and the
# exact accumulator its servers use.
add_executable(fedrt_protocol_tests protocol/exact_sum_test.cc protocol/session_test.cc protocol/memory_sum_test.cc
  protocol/upload_test.cc protocol/device_agent_test.cc protocol/update_norm_test.cc
  protocol/partial_test.cc protocol/async_server_test.cc)
target_link_libraries(fedrt_protocol_tests PRIVATE fedrt_host fedrt_secagg GTest::gtest_main)
gtest_discover_tests(fedrt_protocol_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# Device discipline of the client session: -fno-exceptions -fno-rtti, no heap
# after init in any family (malloc counted; it replaces malloc, so not under
# the sanitizers). Links the SecAgg+ device code the session calls.
add_executable(session_no_heap_test device/session_no_heap_test.cc)
target_link_libraries(session_no_heap_test PRIVATE fedrt_device_headers fedrt_secagg_device)
target_compile_options(session_no_heap_test PRIVATE -fno-exceptions -fno-rtti -UNDEBUG)
target_compile_definitions(session_no_heap_test PRIVATE EIGEN_RUNTIME_NO_MALLOC)
if(NOT FEDRT_SANITIZE)
  add_test(NAME session_no_heap_after_init COMMAND session_no_heap_test)
  add_test(NAME session_no_heap_detects_allocation COMMAND session_no_heap_test --self-check)
  set_tests_properties(session_no_heap_after_init session_no_heap_detects_allocation PROPERTIES LABELS "device")
  set_tests_properties(session_no_heap_detects_allocation PROPERTIES WILL_FAIL TRUE)
endif()
