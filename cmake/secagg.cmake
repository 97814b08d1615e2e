# Secure aggregation: X25519 / HKDF / ChaCha20(-Poly1305) over
# the host's mbedTLS 3.6 (cmake/host_mbedtls.cmake), Shamir sharing, SecAgg+ device and server state machines.
find_library(FEDRT_SODIUM sodium REQUIRED)  # X25519 (runtime/src/secagg/x25519_sodium.cc)

# Device part (crypto wrappers, Shamir, device state machine): no exceptions.
add_library(fedrt_secagg_device STATIC
  runtime/src/secagg/crypto.cc
  runtime/src/secagg/x25519_sodium.cc)
target_include_directories(fedrt_secagg_device SYSTEM PUBLIC ${FEDRT_SECAGG_MBEDTLS_INCLUDE})
target_link_libraries(fedrt_secagg_device PUBLIC fedrt_device_headers ${FEDRT_SECAGG_MBEDCRYPTO} ${FEDRT_SODIUM})
target_compile_options(fedrt_secagg_device PRIVATE -fno-exceptions -fno-rtti)
# Host build: same Status layout as fedrt_host (the firmware compiles these files without FEDRT_HOST).
target_compile_definitions(fedrt_secagg_device PUBLIC FEDRT_HOST=1)
target_sources(fedrt_secagg_device PRIVATE
  runtime/src/secagg/protocol.cc
  runtime/src/secagg/device.cc)
# An object of its own, so that the secagg fuzz target can link its memoised
# X25519 (tests/fuzz/x25519_memo.cc) instead.
set_source_files_properties(runtime/src/secagg/x25519_sodium.cc PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

# Host part: the server state machine and the in-process round driver (on
# the ARM boards for the gateway's session only, FEDRT_DEVICE_ONLY).
add_library(fedrt_secagg STATIC
  runtime/src/secagg/server.cc
  runtime/src/secagg/shamir_decode.cc
  runtime/src/secagg/simulated_entropy.cc)
target_link_libraries(fedrt_secagg PUBLIC fedrt_secagg_device fmt::fmt)
target_link_libraries(fedrt_secagg PUBLIC nlohmann_json::nlohmann_json)
if(FEDRT_DEVICE_ONLY)
  return()
endif()
# The simulator runs the same state machines (secure_aggregation = true).
# (fedrt_protocol links fedrt_secagg; the settings are in the config module.)

# Benchmark (./fedrt bench runs it): bandwidth expansion and device cost per round.

if(FEDRT_BUILD_BENCH)
  add_executable(fedrt-secagg-bench bench/fedrt_secagg_bench.cc)
  target_link_libraries(fedrt-secagg-bench PRIVATE fedrt_test_support fedrt_cli)
endif()
