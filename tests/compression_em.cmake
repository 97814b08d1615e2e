# Tests of the compression codecs and the federated EM family.
# Included from tests/CMakeLists.txt (FEDRT_TEST_DATA, GTest, fedrt_host exist).

add_executable(fedrt_compression_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/compression/quantizer_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/compression/fedem_test.cc
)
target_link_libraries(fedrt_compression_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_compression_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

# Simulator-level acceptance checks (about a second each in release).
add_executable(fedrt_compression_em_stat_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/compression/compression_em_sim_test.cc
)
target_link_libraries(fedrt_compression_em_stat_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_compression_em_stat_tests PROPERTIES LABELS statistical DISCOVERY_TIMEOUT 60)

# Bad compression / EM flags: exit code 2 and a message naming the setting.
set(_sim $<TARGET_FILE:fedrt-sim>)
function(fedrt_cx_fails name regex)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} "-DCMD=${_sim};${ARGN};--no-plot;--out;${CMAKE_CURRENT_BINARY_DIR}/out_${name}"
                   "-DREGEX=${regex}" -DEXPECT_RC=2 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.cmake)
  set_tests_properties(${name} PROPERTIES LABELS cli TIMEOUT 60)
endfunction()
fedrt_cx_fails(sim_bad_quantizer "--quantizer: unknown quantizer 'zip'" --rounds 1 --local-steps 1 --quantizer zip)
fedrt_cx_fails(sim_bad_levels "--levels must be in .1, 1048576., got 0" --rounds 1 --local-steps 1 --quantizer dither --levels 0)
fedrt_cx_fails(sim_bad_bits "--bits must be in .1, 24., got 30" --rounds 1 --local-steps 1 --quantizer rounding --bits 30)
fedrt_cx_fails(sim_bad_clip "--clip must be a positive number, got -1" --rounds 1 --local-steps 1 --quantizer rounding --clip -1)
fedrt_cx_fails(sim_cv_without_quantizer "--compress-cv needs --quantizer" --rounds 1 --local-steps 1 --compress-cv)
fedrt_cx_fails(sim_gmm_bad_algorithm "unknown algorithm 'fedlsa' for this problem" --problem gmm --rounds 1 --algorithm fedlsa)
fedrt_cx_fails(sim_gmm_bad_batch "--batch must be in .0, gmm.points = 50." --config ${CMAKE_CURRENT_SOURCE_DIR}/compression/data/bad_gmm_batch.toml)
fedrt_cx_fails(sim_gmm_bad_inner "--inner-iters must be positive, got 0" --problem gmm --rounds 1 --inner-iters 0)

# Fuzz target for the wire decoder: libFuzzer needs clang (the main build uses
# g++), so it is built by a custom command with clang++ on the header-only
# decoder, and run for a bounded time on the committed seed corpus. New
# inputs go to a scratch corpus in the build tree, never into the sources.
# (The same target is fuzz_replay_codec and codec_fuzzer of tests/fuzz.cmake: docs/fuzzing.md.)
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
            ${PROJECT_SOURCE_DIR}/runtime/include/fedrt/compression/payload.h
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
                   ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/codec)
  set_tests_properties(codec_decode_fuzz PROPERTIES LABELS fuzz TIMEOUT 120
                       ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
else()
  message(STATUS "fedrt: clang++ with libFuzzer not found: the codec decoder fuzz test is skipped "
                 "(apt-get install clang-14 libclang-rt-14-dev)")
endif()
