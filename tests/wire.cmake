# Tests of the wire module (runtime/wire, runtime/include/fedrt/wire): codec
# round trips and rejections, and the nanopb bounds against task/limits.h.
add_executable(fedrt_wire_tests wire/frame_test.cc wire/codec_test.cc wire/limits_test.cc wire/gateway_codec_test.cc)
target_link_libraries(fedrt_wire_tests PRIVATE fedrt_wire GTest::gtest_main)
target_include_directories(fedrt_wire_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)  # sample_task.h
target_compile_definitions(fedrt_wire_tests PRIVATE FEDRT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(fedrt_wire_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
