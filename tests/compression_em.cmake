# Tests of the compression codecs and the federated EM family (issue 4).
# Included from tests/CMakeLists.txt (FEDRT_TEST_DATA, GTest, fedrt_host exist).

add_executable(fedrt_compression_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/compression/quantizer_test.cc
)
target_link_libraries(fedrt_compression_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_compression_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# Fuzz target for the wire decoder: libFuzzer needs clang (the main build uses
# g++), so it is built by a custom command with clang++ on the header-only
# decoder, and run for a bounded time on the committed seed corpus. New
# inputs go to a scratch corpus in the build tree, never into the sources.
find_program(FEDRT_CLANGXX NAMES clang++-14 clang++)
set(_fuzz_src ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/codec_decode_fuzz.cc)
set(_fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/codec_decode_fuzzer)
if(FEDRT_CLANGXX)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.cc
       "extern \"C\" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n")
  execute_process(COMMAND ${FEDRT_CLANGXX} -fsanitize=fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.cc
                          -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe
                  RESULT_VARIABLE _fuzz_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _fuzz_probe_rc EQUAL 0)
    message(STATUS "fedrt: ${FEDRT_CLANGXX} cannot link -fsanitize=fuzzer (install libclang-rt-14-dev): codec fuzz test skipped")
    set(FEDRT_CLANGXX "")
  endif()
endif()
if(FEDRT_CLANGXX)
  add_custom_command(
    OUTPUT ${_fuzz_bin}
    COMMAND ${FEDRT_CLANGXX} -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined -fno-exceptions -fno-rtti
            -I${PROJECT_SOURCE_DIR}/runtime/include ${_fuzz_src} -o ${_fuzz_bin}
    DEPENDS ${_fuzz_src}
            ${PROJECT_SOURCE_DIR}/runtime/include/fedrt/compression/codec.h
            ${PROJECT_SOURCE_DIR}/runtime/include/fedrt/compression/dithering.h
            ${PROJECT_SOURCE_DIR}/runtime/include/fedrt/compression/stochastic_rounding.h
            ${PROJECT_SOURCE_DIR}/runtime/include/fedrt/compression/bit_stream.h
            ${PROJECT_SOURCE_DIR}/runtime/include/fedrt/compression/quantizer.h
    COMMENT "Building the codec decoder fuzz target with ${FEDRT_CLANGXX} (libFuzzer)"
    VERBATIM)
  add_custom_target(codec_decode_fuzz ALL DEPENDS ${_fuzz_bin})
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus)
  add_test(NAME codec_decode_fuzz
           COMMAND ${_fuzz_bin} -max_total_time=5 -seed=1 -max_len=512 -print_final_stats=1
                   ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/codec_corpus)
  set_tests_properties(codec_decode_fuzz PROPERTIES LABELS fuzz TIMEOUT 120
                       ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
else()
  message(STATUS "fedrt: clang++ with libFuzzer not found: the codec decoder fuzz test is skipped "
                 "(apt-get install clang-14 libclang-rt-14-dev)")
endif()
