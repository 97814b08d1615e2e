# Fuzz targets of the decoders that read untrusted bytes (docs/fuzzing.md).
# Included from tests/CMakeLists.txt (host builds only: not the device-only or
# Cortex-M presets). Each target is tests/fuzz/<name>_fuzz.cc, defining
# LLVMFuzzerTestOneInput, with its seed corpus in tests/fuzz/corpus/<name> and
# what long runs kept in tests/fuzz/kept/<name>.tar.xz.
#   host presets (g++; debug adds ASan + UBSan): fuzz_replay_<name> = target +
#     replay_main.cc, ctest fuzz_replay_<name> (label fuzz) replays the corpus;
#   FEDRT_FUZZ=ON (preset fuzz, clang with -fsanitize=fuzzer-no-link): the
#     libFuzzer executables <name>_fuzzer, all built by the target `fuzzers`,
#     run by ./fedrt fuzz (scripts/fuzz.sh), which reads fuzz_targets.txt.

set(_fz ${CMAKE_CURRENT_LIST_DIR}/fuzz)
set(_fz_list ${CMAKE_BINARY_DIR}/fuzz_targets.txt)
file(WRITE ${_fz_list} "")
# A kept archive added or replaced re-runs the configure that unpacks it.
file(GLOB _fz_kept CONFIGURE_DEPENDS ${_fz}/kept/*.tar.xz)
if(FEDRT_FUZZ)
  add_custom_target(fuzzers)
endif()

# fedrt_fuzz_target(<name> <source> <library>...): skipped when a library is
# not part of this build (e.g. the firmware client without its fetched sources).
function(fedrt_fuzz_target name source)
  foreach(lib IN LISTS ARGN)
    if(NOT TARGET ${lib})
      message(STATUS "fedrt: fuzz target ${name} skipped (no ${lib} in this build)")
      return()
    endif()
  endforeach()
  set(corpus ${_fz}/corpus/${name})
  # What long runs kept (./fedrt fuzz --runs N --keep): one archive per target,
  # unpacked here at configure time and replayed with the seeds.
  set(kept ${_fz}/kept/${name}.tar.xz)
  set(kept_dir "")
  if(EXISTS ${kept})
    set(kept_dir ${CMAKE_BINARY_DIR}/fuzz_kept/${name})
    file(REMOVE_RECURSE ${kept_dir})
    file(ARCHIVE_EXTRACT INPUT ${kept} DESTINATION ${kept_dir})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${kept})
  endif()
  if(FEDRT_FUZZ)
    set(exe ${name}_fuzzer)
    add_executable(${exe} ${_fz}/${source})
    target_link_options(${exe} PRIVATE -fsanitize=fuzzer)
    add_dependencies(fuzzers ${exe})
  else()
    set(exe fuzz_replay_${name})
    add_executable(${exe} ${_fz}/${source} ${_fz}/replay_main.cc)
    add_test(NAME fuzz_replay_${name} COMMAND ${exe} ${corpus} ${kept_dir})
    set_tests_properties(fuzz_replay_${name} PROPERTIES LABELS fuzz TIMEOUT 60
      PASS_REGULAR_EXPRESSION "replayed [1-9][0-9]* inputs"
      ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  endif()
  target_include_directories(${exe} PRIVATE ${_fz})
  target_link_libraries(${exe} PRIVATE ${ARGN})
  file(APPEND ${_fz_list} "${name} ${exe} ${corpus}\n")
endfunction()

fedrt_fuzz_target(frame frame_fuzz.cc fedrt_wire)
fedrt_fuzz_target(wire_messages wire_messages_fuzz.cc fedrt_wire)
fedrt_fuzz_target(fw_messages fw_messages_fuzz.cc fedrt_fw_client)
fedrt_fuzz_target(codec codec_decode_fuzz.cc fedrt_device_headers)
fedrt_fuzz_target(secagg secagg_fuzz.cc fedrt_secagg)
if(TARGET secagg_fuzzer)
  # libsodium's X25519 was 72 % of an execution: the fuzzer links the same
  # functions memoised (tests/fuzz/x25519_memo.cc), so the archive's
  # x25519_sodium.cc object is not pulled in. The replay test keeps the real one.
  target_sources(secagg_fuzzer PRIVATE ${_fz}/x25519_memo.cc)
  set_source_files_properties(${_fz}/x25519_memo.cc PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endif()
fedrt_fuzz_target(chunk chunk_fuzz.cc fedrt_protocol fedrt_wire)
fedrt_fuzz_target(gateway_link gateway_link_fuzz.cc fedrt_protocol fedrt_wire)
fedrt_fuzz_target(experiment experiment_fuzz.cc fedrt_config)
fedrt_fuzz_target(csv_shard csv_shard_fuzz.cc fedrt_data)
fedrt_fuzz_target(record_shard record_shard_fuzz.cc fedrt_data)
fedrt_fuzz_target(array_bundle array_bundle_fuzz.cc fedrt_problems)

# The generator of the binary seed corpora (tests/fuzz/make_corpus.cc); run by hand.
if(NOT FEDRT_FUZZ AND TARGET fedrt_wire)
  add_executable(fuzz_make_corpus ${_fz}/make_corpus.cc)
  target_link_libraries(fuzz_make_corpus PRIVATE fedrt_wire fedrt_data fedrt_problems)
endif()
