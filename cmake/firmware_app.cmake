# Firmware application fedrt-fw (issue 6): mbedTLS 2.28 and the nanopb 0.4.7
# runtime built from the Debian source packages that scripts/fetch_sources.sh
# unpacks into build/third_party, messages generated from runtime/wire
# (fedrt.proto + fedrt.options) by the host's nanopb generator, and the
# portable device protocol client runtime/src/fw. Host builds add the client's
# TCP driver (fedrt-fw-host) and the provisioning tool (fedrt-fw-provision);
# firmware builds (C1's cmake/firmware.cmake) add the fedrt-fw image.
# Included from CMakeLists.txt (host) and cmake/firmware.cmake (Cortex-M).
if(FEDRT_FW_APP_INCLUDED)
  return()
endif()
set(FEDRT_FW_APP_INCLUDED ON)

# Provisioning tool (host): needs no fetched sources.
if(NOT CMAKE_CROSSCOMPILING AND FEDRT_BUILD_HOST AND TARGET fedrt_net)
  add_executable(fedrt-fw-provision "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw_provision.cc")
  target_link_libraries(fedrt-fw-provision PRIVATE fedrt_net CLI11::CLI11)
endif()

set(FEDRT_THIRD_PARTY_DIR "${CMAKE_SOURCE_DIR}/build/third_party" CACHE PATH
    "where scripts/fetch_sources.sh unpacked the nanopb and mbedtls source packages")
file(GLOB _fedrt_mbedtls_dirs LIST_DIRECTORIES true "${FEDRT_THIRD_PARTY_DIR}/mbedtls-2.*")
file(GLOB _fedrt_nanopb_dirs LIST_DIRECTORIES true "${FEDRT_THIRD_PARTY_DIR}/nanopb-0.4.*")
find_program(FEDRT_NANOPB_GENERATOR NAMES nanopb_generator.py nanopb_generator)
if(NOT _fedrt_mbedtls_dirs OR NOT _fedrt_nanopb_dirs OR NOT FEDRT_NANOPB_GENERATOR)
  message(STATUS "fedrt-fw: mbedTLS/nanopb sources (scripts/fetch_sources.sh) or nanopb_generator missing: "
                 "firmware client not built")
  return()
endif()
list(GET _fedrt_mbedtls_dirs -1 FEDRT_MBEDTLS_SRC)
list(GET _fedrt_nanopb_dirs -1 FEDRT_NANOPB_SRC)
message(STATUS "fedrt-fw: mbedTLS from ${FEDRT_MBEDTLS_SRC}, nanopb from ${FEDRT_NANOPB_SRC}")

# mbedTLS with the firmware's configuration (runtime/fw/mbedtls_config.h).
set(_fedrt_mbedtls_modules chacha20 chachapoly cipher cipher_wrap constant_time hkdf hmac_drbg md
    memory_buffer_alloc platform platform_util poly1305 sha256 ssl_ciphersuites ssl_cli ssl_msg ssl_tls
    bignum ecp ecp_curves)  # the last three: X25519 for secure aggregation (tests/firmware/secagg_bench.cc)
set(_fedrt_mbedtls_sources "")
foreach(m IN LISTS _fedrt_mbedtls_modules)
  list(APPEND _fedrt_mbedtls_sources "${FEDRT_MBEDTLS_SRC}/library/${m}.c")
endforeach()
add_library(fedrt_fw_mbedtls STATIC ${_fedrt_mbedtls_sources})
target_include_directories(fedrt_fw_mbedtls SYSTEM PUBLIC "${FEDRT_MBEDTLS_SRC}/include"
                           "${CMAKE_SOURCE_DIR}/runtime/fw")
target_compile_definitions(fedrt_fw_mbedtls PUBLIC MBEDTLS_CONFIG_FILE="mbedtls_config.h")
target_compile_options(fedrt_fw_mbedtls PRIVATE -w)

# nanopb messages from the same .proto/.options as the host's protobuf-lite code,
# with the firmware's tighter SecAgg+ bounds (runtime/fw/fedrt_fw.options) appended.
set(FEDRT_NANOPB_OUT "${CMAKE_BINARY_DIR}/generated/nanopb")
file(MAKE_DIRECTORY "${FEDRT_NANOPB_OUT}")
set(_fw_opts "${CMAKE_SOURCE_DIR}/runtime/wire/fedrt.options" "${CMAKE_SOURCE_DIR}/runtime/fw/fedrt_fw.options")
add_custom_command(
  OUTPUT "${FEDRT_NANOPB_OUT}/fedrt.npb.c" "${FEDRT_NANOPB_OUT}/fedrt.npb.h"
  COMMAND ${CMAKE_COMMAND} -E cat ${_fw_opts} > "${FEDRT_NANOPB_OUT}/fedrt_fw_merged.options"
  COMMAND "${FEDRT_NANOPB_GENERATOR}" -q -e .npb -D "${FEDRT_NANOPB_OUT}" -I "${CMAKE_SOURCE_DIR}/runtime/wire"
          -f "${FEDRT_NANOPB_OUT}/fedrt_fw_merged.options" "${CMAKE_SOURCE_DIR}/runtime/wire/fedrt.proto"
  DEPENDS "${CMAKE_SOURCE_DIR}/runtime/wire/fedrt.proto" ${_fw_opts}
  COMMENT "nanopb fedrt.proto (bounded by fedrt.options + runtime/fw/fedrt_fw.options)")
add_library(fedrt_fw_nanopb STATIC "${FEDRT_NANOPB_SRC}/pb_encode.c" "${FEDRT_NANOPB_SRC}/pb_decode.c"
            "${FEDRT_NANOPB_SRC}/pb_common.c" "${FEDRT_NANOPB_OUT}/fedrt.npb.c")
target_include_directories(fedrt_fw_nanopb SYSTEM PUBLIC "${FEDRT_NANOPB_SRC}" "${FEDRT_NANOPB_OUT}")
target_compile_options(fedrt_fw_nanopb PRIVATE -w)

# The portable protocol client: device code (no exceptions, RTTI, heap), with
# the SecAgg+ device for secure rounds (tables for 16 neighbours, the bound of
# runtime/fw/fedrt_fw.options).
add_library(fedrt_fw_client STATIC "${CMAKE_SOURCE_DIR}/runtime/src/fw/client.cc"
            "${CMAKE_SOURCE_DIR}/runtime/src/secagg/crypto.cc" "${CMAKE_SOURCE_DIR}/runtime/src/secagg/x25519_mbedtls.cc"
            "${CMAKE_SOURCE_DIR}/runtime/src/secagg/protocol.cc"
            "${CMAKE_SOURCE_DIR}/runtime/src/secagg/device.cc")
target_link_libraries(fedrt_fw_client PUBLIC fedrt_device_headers fedrt_fw_mbedtls fedrt_fw_nanopb)
target_compile_options(fedrt_fw_client PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
target_compile_definitions(fedrt_fw_client PUBLIC FEDRT_SCALAR_FLOAT FEDRT_SECAGG_MAX_NEIGHBOURS=16)

if(NOT CMAKE_CROSSCOMPILING AND FEDRT_BUILD_HOST AND TARGET fedrt_net)
  # Host driver over TCP. Links only the firmware's mbedTLS (never Debian's: same symbols).
  add_executable(fedrt-fw-host "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw_host.cc")
  target_link_libraries(fedrt-fw-host PRIVATE fedrt_fw_client CLI11::CLI11)
endif()

if(COMMAND fedrt_add_firmware)
  # Cortex-M (C1's platform/mps2): Eigen kernels inlined as in every firmware unit.
  target_link_libraries(fedrt_fw_client PUBLIC fedrt_firmware_config)
  fedrt_add_firmware(fedrt-fw
    SOURCES "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw.cc"
    STACK_SIZE 6144  # high-water mark 4.7 KB in secure rounds (X25519), 3.7 KB in plain ones
    LIBRARIES fedrt_fw_client
    NO_STANDALONE_RUN)
  # fedrt-fw in a fleet under qemu-system-arm (UART1 bridged to TCP), with the
  # host tools of the release preset (coordinator, native devices, relay):
  # skipped (77) when those are not built.
  if(FEDRT_BUILD_TESTS)
    enable_testing()
    set(FEDRT_HOST_BIN_DIR "${CMAKE_SOURCE_DIR}/build/release/bin" CACHE PATH
        "host tools (fedrt-coordinator, fedrt-device, fedrt-fw-provision, fw-link-relay) for the firmware link tests")
    set(_fw_link "${CMAKE_SOURCE_DIR}/tests/fw_link/run_fw_link.sh" --bin "${FEDRT_HOST_BIN_DIR}"
        --elf "$<TARGET_FILE:fedrt-fw>" --machine "${FEDRT_MPS2_MACHINE}")
    add_test(NAME fw_link_qemu_fleet COMMAND ${_fw_link} --out "${CMAKE_BINARY_DIR}/fw_link/fleet"
             --fw 2 --native 2 --compare-sim)
    add_test(NAME fw_link_qemu_fleet_dither COMMAND ${_fw_link} --out "${CMAKE_BINARY_DIR}/fw_link/fleet-dither"
             --fw 2 --native 2 --compare-sim --config "${CMAKE_SOURCE_DIR}/tests/fw_link/experiment_dither.toml")
    # Secure aggregation (issue 7): fedrt-fw in SecAgg+ rounds, equal to the same fleet's plain run.
    add_test(NAME fw_link_qemu_secagg COMMAND "${CMAKE_SOURCE_DIR}/tests/fw_link/run_fw_secagg.sh" --bin "${FEDRT_HOST_BIN_DIR}"
             --elf "$<TARGET_FILE:fedrt-fw>" --machine "${FEDRT_MPS2_MACHINE}" --out "${CMAKE_BINARY_DIR}/fw_link/secagg"
             --fw 2 --native 2)
    foreach(mode corrupt-record bad-frames huge-frame)
      add_test(NAME fw_link_qemu_${mode} COMMAND ${_fw_link} --out "${CMAKE_BINARY_DIR}/fw_link/${mode}"
               --fw 1 --native 1 --mode ${mode})
    endforeach()
    set_tests_properties(fw_link_qemu_fleet fw_link_qemu_fleet_dither fw_link_qemu_secagg fw_link_qemu_corrupt-record fw_link_qemu_bad-frames
                         fw_link_qemu_huge-frame PROPERTIES
                         LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 300)
    set_tests_properties(fw_link_qemu_secagg PROPERTIES TIMEOUT 600)  # two federations
  endif()
endif()
