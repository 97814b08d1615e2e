# Firmware applications fedrt-fw and fedrt-fw-lsa: mbedTLS 3.6 and the
# nanopb 0.4.7 runtime built from the Debian source packages that
# scripts/fetch_sources.sh unpacks into build/third_party, messages generated
# from runtime/wire (fedrt.proto + fedrt.options + the firmware's bounds) by
# the host's nanopb generator, and the portable device client runtime/src/fw.
# Host builds add the client's TCP driver (fedrt-fw-host, fedrt-fw-host-lsa)
# and the provisioning tool (fedrt-fw-provision); firmware builds
# (cmake/firmware.cmake) add the two images.
# Included from CMakeLists.txt (host) and cmake/firmware.cmake (Cortex-M).
if(FEDRT_FW_APP_INCLUDED)
  return()
endif()
set(FEDRT_FW_APP_INCLUDED ON)

# Provisioning tool (host): needs no fetched sources.
if(NOT CMAKE_CROSSCOMPILING AND FEDRT_BUILD_HOST AND TARGET fedrt_net)
  add_executable(fedrt-fw-provision "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw_provision.cc"
                 "${CMAKE_SOURCE_DIR}/runtime/src/fw/provision.cc")
  target_link_libraries(fedrt-fw-provision PRIVATE fedrt_net fedrt_cli)
endif()

include(${CMAKE_CURRENT_LIST_DIR}/third_party.cmake)
find_program(FEDRT_NANOPB_GENERATOR NAMES nanopb_generator.py nanopb_generator)
if(NOT FEDRT_MBEDTLS_SRC OR NOT FEDRT_NANOPB_SRC OR NOT FEDRT_SODIUM_SRC OR NOT FEDRT_NANOPB_GENERATOR)
  message(STATUS "fedrt-fw: mbedTLS/nanopb/libsodium sources (scripts/fetch_sources.sh) or nanopb_generator missing: "
                 "firmware client not built")
  return()
endif()
message(STATUS "fedrt-fw: mbedTLS from ${FEDRT_MBEDTLS_SRC}, nanopb from ${FEDRT_NANOPB_SRC}")

# mbedTLS with the firmware's configuration: a TLS 1.3 psk_dhe_ke client with
# X25519 in a PSA driver over libsodium's ref10 ladder
# (runtime/fw/fw_mbedtls_config.h, cmake/fw_mbedtls.cmake).
# Every library file: the configuration leaves most of them empty, and
# --gc-sections drops what an image does not call.
include(${CMAKE_CURRENT_LIST_DIR}/fw_mbedtls.cmake)
fedrt_fw_mbedtls_library(fedrt_fw_mbedtls fw_mbedtls_config.h)

# nanopb messages from the same .proto/.options as the host's protobuf-lite
# code, with the firmware's tighter bounds appended (nanopb merges matching
# entries in order, later ones win): runtime/fw/fedrt_fw.options for every
# image (SecAgg+ with 16 neighbours), and runtime/fw/fedrt_fw_lsa.options for
# the LSA-only image (2 KB frames). Each image's code goes to its own
# directory, so no target sees two fedrt.npb.h.
add_library(fedrt_fw_pb STATIC "${FEDRT_NANOPB_SRC}/pb_encode.c" "${FEDRT_NANOPB_SRC}/pb_decode.c"
            "${FEDRT_NANOPB_SRC}/pb_common.c")
target_include_directories(fedrt_fw_pb SYSTEM PUBLIC "${FEDRT_NANOPB_SRC}")
target_compile_options(fedrt_fw_pb PRIVATE -w)
fedrt_no_unity_build(fedrt_fw_pb)
function(_fedrt_fw_messages target subdir)
  set(out "${CMAKE_BINARY_DIR}/generated/${subdir}")
  file(MAKE_DIRECTORY "${out}")
  set(opts "${CMAKE_SOURCE_DIR}/runtime/wire/fedrt.options")
  foreach(o IN LISTS ARGN)
    list(APPEND opts "${CMAKE_SOURCE_DIR}/runtime/fw/${o}")
  endforeach()
  add_custom_command(
    OUTPUT "${out}/fedrt.npb.c" "${out}/fedrt.npb.h"
    COMMAND ${CMAKE_COMMAND} -E cat ${opts} > "${out}/fedrt_fw_merged.options"
    COMMAND "${FEDRT_NANOPB_GENERATOR}" -q -e .npb -D "${out}" -I "${CMAKE_SOURCE_DIR}/runtime/wire"
            -f "${out}/fedrt_fw_merged.options" "${CMAKE_SOURCE_DIR}/runtime/wire/fedrt.proto"
    DEPENDS "${CMAKE_SOURCE_DIR}/runtime/wire/fedrt.proto" ${opts}
    COMMENT "nanopb fedrt.proto (${subdir}: fedrt.options + ${ARGN})")
  add_library(${target} STATIC "${out}/fedrt.npb.c")
  target_include_directories(${target} SYSTEM PUBLIC "${out}")
  target_link_libraries(${target} PUBLIC fedrt_fw_pb)
  target_compile_options(${target} PRIVATE -w)
endfunction()
_fedrt_fw_messages(fedrt_fw_nanopb nanopb fedrt_fw.options)
_fedrt_fw_messages(fedrt_fw_nanopb_lsa nanopb-lsa fedrt_fw.options fedrt_fw_lsa.options)

# X25519 for the firmware: libsodium's ref10 ladder (runtime/src/secagg/x25519_ref10_ladder.c).
set(_sodium "${FEDRT_SODIUM_SRC}/src/libsodium")
add_library(fedrt_fw_x25519 STATIC "${CMAKE_SOURCE_DIR}/runtime/src/secagg/x25519_ref10_ladder.c"
            "${CMAKE_SOURCE_DIR}/runtime/src/secagg/x25519_ref10.cc")
fedrt_no_unity_build(fedrt_fw_x25519)
target_include_directories(fedrt_fw_x25519 SYSTEM PRIVATE "${_sodium}" "${_sodium}/include/sodium")
target_compile_definitions(fedrt_fw_x25519 PRIVATE CONFIGURED=1)
target_link_libraries(fedrt_fw_x25519 PUBLIC fedrt_device_headers)
if(NOT CMAKE_CROSSCOMPILING)
  # Host builds (fedrt-fw-host) keep all of ed25519_ref10.c: its helpers
  # (sodium_is_zero, crypto_verify_32, ...) come from the system's libsodium.
  find_library(FEDRT_SODIUM sodium REQUIRED)
  target_link_libraries(fedrt_fw_x25519 PUBLIC ${FEDRT_SODIUM})
endif()
target_compile_options(fedrt_fw_x25519 PRIVATE $<$<COMPILE_LANGUAGE:C>:-w> $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)

# The SecAgg+ device with tables for 16 neighbours (the bound of runtime/fw/fedrt_fw.options).
add_library(fedrt_fw_secagg_device STATIC
            "${CMAKE_SOURCE_DIR}/runtime/src/secagg/crypto.cc"
            "${CMAKE_SOURCE_DIR}/runtime/src/secagg/protocol.cc" "${CMAKE_SOURCE_DIR}/runtime/src/secagg/device.cc")
target_link_libraries(fedrt_fw_secagg_device PUBLIC fedrt_device_headers fedrt_fw_mbedtls fedrt_fw_x25519)
target_compile_options(fedrt_fw_secagg_device PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
target_compile_definitions(fedrt_fw_secagg_device PUBLIC FEDRT_SCALAR_FLOAT FEDRT_SECAGG_MAX_NEIGHBOURS=16)

# The device client (runtime/src/fw: driver, nanopb codec, TLS link) over
# ClientSession<float>: every family (fedrt_fw_client) or LSA only
# (fedrt_fw_client_lsa). Device code: no exceptions, RTTI or heap.
set(_fw_client_sources "${CMAKE_SOURCE_DIR}/runtime/src/fw/client.cc" "${CMAKE_SOURCE_DIR}/runtime/src/fw/client_poll.cc"
    "${CMAKE_SOURCE_DIR}/runtime/src/fw/own_samples.cc"
    "${CMAKE_SOURCE_DIR}/runtime/src/fw/nanopb_codec.cc"
    "${CMAKE_SOURCE_DIR}/runtime/src/fw/tls_link.cc" "${CMAKE_SOURCE_DIR}/runtime/src/fw/capi.cc")
foreach(_v "" "_lsa")
  add_library(fedrt_fw_client${_v} STATIC ${_fw_client_sources})
  target_link_libraries(fedrt_fw_client${_v} PUBLIC fedrt_device_headers fedrt_fw_secagg_device fedrt_fw_mbedtls
                        fedrt_fw_nanopb${_v})
  target_compile_options(fedrt_fw_client${_v} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
endforeach()
target_compile_definitions(fedrt_fw_client_lsa PRIVATE "FEDRT_FW_FAMILIES=fedrt::protocol::kFamilyLsa"
  # It refuses every optimisation task, so every DP task: the privacy bounds
  # and the distributed mechanism's fingerprint fields are left out
  # (task/check.h, task/fingerprint.h).
  FEDRT_TASK_NO_DP
  # Local-step kernels unrolled for d = 8 only (the examples' d), every other
  # d on the Eigen::Dynamic one (core/types.h, DispatchDim): about 3 KB of
  # flash that TLS 1.3 needs on the 96 KB part.
  FEDRT_UNROLLED_DIM=8)

if(NOT CMAKE_CROSSCOMPILING AND FEDRT_BUILD_HOST AND TARGET fedrt_net)
  # Host driver over TCP, one per image. Links only the firmware's mbedTLS (never Debian's: same symbols).
  foreach(_v "" "-lsa")
    string(REPLACE "-" "_" _lib "fedrt_fw_client${_v}")
    add_executable(fedrt-fw-host${_v} "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw_host.cc")
    target_link_libraries(fedrt-fw-host${_v} PRIVATE ${_lib} fedrt_cli)
    target_compile_definitions(fedrt-fw-host${_v} PRIVATE FEDRT_FW_HOST_NAME="fedrt-fw-host${_v}")
  endforeach()
endif()

if(COMMAND fedrt_add_firmware)
  # Cortex-M (C1's platform/mps2): Eigen kernels inlined as in every firmware unit.
  foreach(_lib fedrt_fw_client fedrt_fw_client_lsa fedrt_fw_secagg_device fedrt_fw_x25519 fedrt_fw_mbedtls)
    target_link_libraries(${_lib} PUBLIC fedrt_firmware_config)
  endforeach()
  # Two images (platform/mps2/budget.json): fedrt-fw runs every family its
  # task names within 128 KB flash / 64 KB RAM; fedrt-fw-lsa runs FedLSA and
  # SCAFFLSA only, within 96 KB / 32 KB. The workspace (local oracle + the
  # protocol session's arena) is what RAM is left after frames, TLS and stack.
  fedrt_add_firmware(fedrt-fw
    SOURCES "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw.cc"
    STACK_SIZE 6144  # high-water mark 4.7 KB in secure rounds (X25519), 3.7 KB in plain ones
    LIBRARIES fedrt_fw_client
    LAYOUT large
    NO_STANDALONE_RUN
    FOOTPRINT_LOG "${CMAKE_BINARY_DIR}/fw_link/secagg/secure/dev0000.log")  # fw_link_qemu_secagg
  target_compile_definitions(fedrt-fw PRIVATE FEDRT_FW_WORKSPACE_BYTES=28672)
  fedrt_add_firmware(fedrt-fw-lsa
    SOURCES "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw.cc"
    STACK_SIZE 5632  # high-water mark about 3.1 KB with ref10 X25519 (TLS 1.3 key share and SecAgg+)
    LIBRARIES fedrt_fw_client_lsa
    NO_STANDALONE_RUN
    FOOTPRINT_LOG "${CMAKE_BINARY_DIR}/fw_link/lsa-fleet/dev0000.log")  # fw_link_qemu_lsa_fleet
  target_compile_definitions(fedrt-fw-lsa PRIVATE FEDRT_FW_WORKSPACE_BYTES=10240)
  # examples/mcu-own-data: a C99 firmware on the C API alone
  # (fedrt/mcu_device.h), training on the shard compiled into its flash
  # (device-0.csv as const arrays, shard_to_c.py at build time). Its static
  # buffer holds the whole device (client state and frames, TLS heap, arena);
  # the firmware checks it against fedrt_workspace_size() at boot.
  # It serves own-data least squares / logistic tasks only: a client with the
  # optimisation family alone (no LSA or EM code).
  add_library(fedrt_fw_client_opt STATIC ${_fw_client_sources})
  target_link_libraries(fedrt_fw_client_opt PUBLIC fedrt_device_headers fedrt_fw_secagg_device fedrt_fw_mbedtls
                        fedrt_fw_nanopb fedrt_firmware_config)
  target_compile_options(fedrt_fw_client_opt PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
  target_compile_definitions(fedrt_fw_client_opt PRIVATE "FEDRT_FW_FAMILIES=fedrt::protocol::kFamilyOpt")
  set(_own "${CMAKE_SOURCE_DIR}/examples/mcu-own-data")
  set(_own_shard "${CMAKE_BINARY_DIR}/generated/mcu-own-data/shard-device-0.c")
  add_custom_command(OUTPUT "${_own_shard}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_BINARY_DIR}/generated/mcu-own-data"
    COMMAND "${Python3_EXECUTABLE}" "${_own}/shard_to_c.py" --input "${_own}/shards/device-0.csv" --out "${_own_shard}"
    DEPENDS "${_own}/shard_to_c.py" "${_own}/shards/device-0.csv"
    COMMENT "shard_to_c.py: examples/mcu-own-data/shards/device-0.csv into flash")
  fedrt_add_firmware(fedrt-fw-own
    SOURCES "${_own}/firmware.c" "${_own_shard}"
    STACK_SIZE 6144
    LIBRARIES fedrt_fw_client_opt
    LAYOUT large
    NO_STANDALONE_RUN
    FOOTPRINT_LOG "${CMAKE_BINARY_DIR}/fw_link/c-api-qemu/c/dev0000.log")  # c_api_qemu_own_data
  target_compile_definitions(fedrt-fw-own PRIVATE FEDRT_OWN_WORKSPACE_BYTES=34816 FEDRT_OWN_MAX_DIM=16)
  set_target_properties(fedrt-fw-own PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF LINKER_LANGUAGE CXX)
  # fedrt-fw-digits: the same C99 firmware for own-data tasks up to d = 650
  # (softmax regression on the 8x8 digits, d = 10 (64 + 1)) on the memory of
  # an nRF52840 (1 MB flash / 256 KB RAM, mps2-an386-nrf52840.ld): nanopb
  # bounds of runtime/fw/fedrt_fw_d650.options, a workspace for every
  # optimisation algorithm of logistic and softmax regression with 4-bit
  # dithering or SecAgg+ at d = 650 (least squares at that d would need its
  # 3.4 MB Abar_c: refused for memory), and the shard as a per-device blob in
  # the flash region at fedrt_shard_block (shard_to_blob.py; qemu-run.sh
  # --shard), read in place: one image for every device.
  if(FEDRT_FW_CPU STREQUAL "cortex-m4")
    _fedrt_fw_messages(fedrt_fw_nanopb_d650 nanopb-d650 fedrt_fw.options fedrt_fw_d650.options)
    # SecAgg+ with up to 32 neighbours: the complete graph of the digits
    # example's 20 devices (k = 19) fits, 16 would not.
    add_library(fedrt_fw_secagg_device32 STATIC $<TARGET_PROPERTY:fedrt_fw_secagg_device,SOURCES>)
    target_link_libraries(fedrt_fw_secagg_device32 PUBLIC fedrt_device_headers fedrt_fw_mbedtls fedrt_fw_x25519
                          fedrt_firmware_config)
    target_compile_options(fedrt_fw_secagg_device32 PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
    target_compile_definitions(fedrt_fw_secagg_device32 PUBLIC FEDRT_SCALAR_FLOAT FEDRT_SECAGG_MAX_NEIGHBOURS=32)
    add_library(fedrt_fw_client_d650 STATIC ${_fw_client_sources})
    target_link_libraries(fedrt_fw_client_d650 PUBLIC fedrt_device_headers fedrt_fw_secagg_device32 fedrt_fw_mbedtls
                          fedrt_fw_nanopb_d650 fedrt_firmware_config)
    target_compile_options(fedrt_fw_client_d650 PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
    target_compile_definitions(fedrt_fw_client_d650 PRIVATE "FEDRT_FW_FAMILIES=fedrt::protocol::kFamilyOpt")
    fedrt_add_firmware(fedrt-fw-digits
      SOURCES "${_own}/firmware.c" "${_own}/shard_blob.c"
      STACK_SIZE 6144
      LIBRARIES fedrt_fw_client_d650
      LAYOUT nrf52840
      NO_STANDALONE_RUN
      FOOTPRINT_LOG "${CMAKE_BINARY_DIR}/fw_link/digits-secagg/logs/dev0018.log")  # fleet_qemu_digits_secagg
    target_include_directories(fedrt-fw-digits PRIVATE "${_own}")
    target_compile_definitions(fedrt-fw-digits PRIVATE FEDRT_OWN_SHARD_BLOB FEDRT_OWN_WORKSPACE_BYTES=190976
                               FEDRT_OWN_MAX_DIM=650 FEDRT_OWN_SECAGG=1
                               "FEDRT_OWN_MODELS=(FEDRT_MODEL_LOGISTIC|FEDRT_MODEL_SOFTMAX)")
    set_target_properties(fedrt-fw-digits PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF LINKER_LANGUAGE CXX)
    # fedrt-fw-d4096: the provisioned-data firmware (runtime/apps/fedrt_fw.cc)
    # for the optimisation family with a 2 KB frame buffer
    # (runtime/fw/fedrt_fw_d4096.options) on the memory of an nRF52840: the
    # broadcast arrives in 1 KB chunks decoded into the session's arena and
    # updates leave in chunks, so its d is set by the workspace alone (least
    # squares at d = 4096, FedAvg: 208 KB of state vectors, matrix-free
    # oracle over the agent's samples in the data partition).
    _fedrt_fw_messages(fedrt_fw_nanopb_d4096 nanopb-d4096 fedrt_fw.options fedrt_fw_d4096.options)
    add_library(fedrt_fw_client_d4096 STATIC ${_fw_client_sources})
    target_link_libraries(fedrt_fw_client_d4096 PUBLIC fedrt_device_headers fedrt_fw_secagg_device fedrt_fw_mbedtls
                          fedrt_fw_nanopb_d4096 fedrt_firmware_config)
    target_compile_options(fedrt_fw_client_d4096 PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
    target_compile_definitions(fedrt_fw_client_d4096 PRIVATE "FEDRT_FW_FAMILIES=fedrt::protocol::kFamilyOpt")
    fedrt_add_firmware(fedrt-fw-d4096
      SOURCES "${CMAKE_SOURCE_DIR}/runtime/apps/fedrt_fw.cc"
      STACK_SIZE 6144
      LIBRARIES fedrt_fw_client_d4096
      LAYOUT nrf52840
      NO_STANDALONE_RUN
      FOOTPRINT_LOG "${CMAKE_BINARY_DIR}/fw_link/d4096/dev0000.log")  # fw_link_qemu_d4096
    target_compile_definitions(fedrt-fw-d4096 PRIVATE FEDRT_FW_WORKSPACE_BYTES=217088)
  endif()
  # The images in a fleet under qemu-system-arm (UART1 bridged to TCP), with
  # the host tools of the release preset (coordinator, native devices,
  # provisioning, relay, simulator): skipped (77) when those are not built.
  # fedrt-fw runs every family, fedrt-fw-lsa the LSA family and refuses the others.
  if(FEDRT_BUILD_TESTS)
    enable_testing()
    set(FEDRT_HOST_BIN_DIR "${CMAKE_SOURCE_DIR}/build/release/bin" CACHE PATH
        "host tools (fedrt-coordinator, fedrt-device, fedrt-fw-provision, fw-link-relay, fedrt-sim) for the firmware link tests")
    set(_dir "${CMAKE_SOURCE_DIR}/tests/fw_link")
    set(_out "${CMAKE_BINARY_DIR}/fw_link")
    set(_fw_link "${_dir}/run_fw_link.sh" --bin "${FEDRT_HOST_BIN_DIR}" --machine "${FEDRT_MPS2_MACHINE}")
    set(_full --elf "$<TARGET_FILE:fedrt-fw>")
    set(_lsa --elf "$<TARGET_FILE:fedrt-fw-lsa>")
    add_test(NAME fw_link_qemu_fleet COMMAND ${_fw_link} ${_full} --out "${_out}/fleet" --fw 2 --native 2 --compare-sim)
    add_test(NAME fw_link_qemu_lsa_fleet COMMAND ${_fw_link} ${_lsa} --out "${_out}/lsa-fleet" --fw 2 --native 2
             --compare-sim)
    # No TCP bridge: each image's UART1 on a QEMU pseudo-terminal that the coordinator serves with --serial,
    # beside two TCP devices (docs/microcontrollers.md, "A board on a serial line").
    add_test(NAME fw_link_qemu_serial COMMAND ${_fw_link} ${_full} --out "${_out}/serial" --fw 2 --native 2
             --compare-sim --link pty)
    # The same boards behind a gateway: fedrt-gateway serves their lines and hands the coordinator one aggregate
    # per round (docs/gateways.md); the TCP devices stay on the coordinator.
    add_test(NAME fw_link_qemu_serial_gateway COMMAND ${_fw_link} ${_full} --out "${_out}/serial-gateway" --fw 2
             --native 2 --compare-sim --link pty --gateway)
    # The reset button of one board mid-run: it boots afresh on the same line and the coordinator takes over.
    add_test(NAME fw_link_qemu_serial_reset COMMAND ${_fw_link} ${_full} --out "${_out}/serial-reset" --fw 1 --native 2
             --link pty --reset-at-round 3 --config "${_dir}/experiment_serial_reset.toml")
    # The coordinator killed after round 30 and restarted on its state db: the board on its line resumes too.
    add_test(NAME fw_link_qemu_serial_restart COMMAND ${_fw_link} ${_full} --out "${_out}/serial-restart" --fw 1
             --native 2 --link pty --kill-coordinator-at-round 30 --config "${_dir}/experiment_serial_reset.toml")
    # network.psk_forward_secrecy = false: the coordinator takes psk_ke only, and the firmware still connects.
    add_test(NAME fw_link_qemu_lsa_psk_ke COMMAND ${_fw_link} ${_lsa} --out "${_out}/lsa-psk-ke" --fw 2 --native 1
             --config "${_dir}/experiment_psk_ke.toml" --tls "TLSv1.3/none")
    add_test(NAME fw_link_qemu_fleet_dither COMMAND ${_fw_link} ${_lsa} --out "${_out}/fleet-dither" --fw 2 --native 2
             --compare-sim --config "${_dir}/experiment_dither.toml")
    add_test(NAME fw_link_qemu_fedavg COMMAND ${_fw_link} ${_full} --out "${_out}/fedavg" --fw 2 --native 2
             --compare-sim --config "${_dir}/experiment_fedavg.toml")
    # Central DP-FedAvg: the firmware clips, the coordinator adds the simulator's noise (test_seed).
    add_test(NAME fw_link_qemu_fedavg_dp COMMAND ${_fw_link} ${_full} --out "${_out}/fedavg-dp" --fw 2 --native 2
             --compare-sim --config "${_dir}/experiment_fedavg_dp.toml")
    # Adaptive clipping: the firmware reads the announced clip and reports its clip indicator.
    add_test(NAME fw_link_qemu_fedavg_dp_adaptive COMMAND ${_fw_link} ${_full} --out "${_out}/fedavg-dp-adaptive"
             --fw 2 --native 2 --compare-sim --config "${_dir}/experiment_fedavg_dp_adaptive.toml")
    add_test(NAME fw_link_qemu_fedavg_ddp COMMAND ${_fw_link} ${_full} --out "${_out}/fedavg-ddp" --fw 2 --native 2
             --compare-sim --config "${_dir}/experiment_fedavg_ddp.toml")
    add_test(NAME fw_link_qemu_fedem COMMAND ${_fw_link} ${_full} --out "${_out}/fedem" --fw 2 --native 2
             --compare-sim --config "${_dir}/experiment_fedem.toml")
    add_test(NAME fw_link_qemu_lsa_refuses_fedavg COMMAND ${_fw_link} ${_lsa} --out "${_out}/lsa-refuses-fedavg"
             --fw 1 --native 2 --config "${_dir}/experiment_fedavg.toml"
             --expect-refusal "does not include the task's algorithm family")
    # Secure aggregation: the firmware in SecAgg+ rounds, equal to the same fleet's plain run.
    add_test(NAME fw_link_qemu_secagg COMMAND "${_dir}/run_fw_secagg.sh" --bin "${FEDRT_HOST_BIN_DIR}" ${_full}
             --machine "${FEDRT_MPS2_MACHINE}" --out "${_out}/secagg" --fw 2 --native 2)
    foreach(mode corrupt-record bad-frames huge-frame)
      add_test(NAME fw_link_qemu_${mode} COMMAND ${_fw_link} ${_lsa} --out "${_out}/${mode}" --fw 1 --native 1
               --mode ${mode})
    endforeach()
    # The C API firmware with its shard in flash against a fleet of C++ devices on the same shards.
    add_test(NAME c_api_qemu_own_data COMMAND "${_dir}/run_c_api.sh" --bin "${FEDRT_HOST_BIN_DIR}"
             --elf "$<TARGET_FILE:fedrt-fw-own>" --machine "${FEDRT_MPS2_MACHINE}"
             --shards "${CMAKE_SOURCE_DIR}/examples/mcu-own-data/shards" --out "${_out}/c-api-qemu")
    # The digits example (softmax, d = 650) on 18 native + 2 fedrt-fw-digits
    # devices, 3 rounds per algorithm, against the simulator: plain, 4-bit
    # dithering with control variates, SecAgg+ (scripts/fleet.sh --cortex-m4
    # with [data] shards).
    if(TARGET fedrt-fw-digits)
      set(_digits "${_dir}/run_digits_fleet.sh" --bin "${FEDRT_HOST_BIN_DIR}" --elf "$<TARGET_FILE:fedrt-fw-digits>"
          --rounds 3 --native 18 --fw 2)
      add_test(NAME fleet_qemu_digits COMMAND ${_digits} --out "${_out}/digits")
      add_test(NAME fleet_qemu_digits_4bit COMMAND ${_digits} --out "${_out}/digits-4bit"
               --config "${CMAKE_SOURCE_DIR}/examples/digits/experiment-4bit.toml")
      add_test(NAME fleet_qemu_digits_secagg COMMAND ${_digits} --out "${_out}/digits-secagg"
               --config "${CMAKE_SOURCE_DIR}/examples/digits/experiment-secagg.toml")
      # Distributed DP with every update exactly zero: 2 native + 2 fedrt-fw-digits,
      # three runs of one round, metrics.csv byte for byte fedrt-sim's (test_seed).
      add_test(NAME fleet_qemu_ddp_zero COMMAND "${_dir}/run_digits_fleet.sh" --bin "${FEDRT_HOST_BIN_DIR}"
               --elf "$<TARGET_FILE:fedrt-fw-digits>" --rounds 1 --native 2 --fw 2 --exact
               --config "${_dir}/experiment_ddp_zero.toml" --out "${_out}/ddp-zero")
      set_tests_properties(fleet_qemu_digits fleet_qemu_digits_4bit fleet_qemu_digits_secagg fleet_qemu_ddp_zero
                           PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 300)
      # A missing or corrupted shard blob stops the image at boot with the reason.
      add_test(NAME fw_digits_bad_shard_blob COMMAND "${_dir}/run_shard_blob_check.sh"
               --elf "$<TARGET_FILE:fedrt-fw-digits>" --shard "${CMAKE_SOURCE_DIR}/examples/digits/split/device-3.csv"
               --classes 10 --out "${_out}/digits-bad-blob")
      set_tests_properties(fw_digits_bad_shard_blob PROPERTIES LABELS device SKIP_RETURN_CODE 77 TIMEOUT 120)
    endif()
    # A broadcast 16 times the frame buffer: least squares at d = 4096
    # (FedAvg, 32 KB broadcasts and updates) with fedrt-fw-d4096 (2 KB frames)
    # and Linux devices, every broadcast and update in 1 KB chunks, against
    # the simulator within run_fw_link.sh's float32 bound T H u |theta|_inf
    # sqrt(d) at this experiment's T = 3, H = 5, d = 4096, |theta|_inf < 1:
    # 5.8e-5.
    if(TARGET fedrt-fw-d4096)
      add_test(NAME fw_link_qemu_d4096 COMMAND ${_fw_link} --elf "$<TARGET_FILE:fedrt-fw-d4096>" --out "${_out}/d4096"
               --fw 1 --native 2 --compare-sim --config "${_dir}/experiment_d4096.toml"
               --expect-chunks "bytes=32768 chunks=32")
      set_tests_properties(fw_link_qemu_d4096 PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 300
                           ENVIRONMENT "FW_SIM_BOUND=5.8e-5")
    endif()
    set(_tests c_api_qemu_own_data fw_link_qemu_fleet fw_link_qemu_lsa_fleet fw_link_qemu_serial fw_link_qemu_serial_gateway
        fw_link_qemu_serial_reset
        fw_link_qemu_serial_restart fw_link_qemu_lsa_psk_ke fw_link_qemu_fleet_dither fw_link_qemu_fedavg
        fw_link_qemu_fedavg_dp fw_link_qemu_fedavg_dp_adaptive fw_link_qemu_fedavg_ddp fw_link_qemu_fedem fw_link_qemu_lsa_refuses_fedavg fw_link_qemu_secagg
        fw_link_qemu_corrupt-record fw_link_qemu_bad-frames fw_link_qemu_huge-frame)
    set_tests_properties(${_tests} PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 300)
    set_tests_properties(fw_link_qemu_secagg PROPERTIES TIMEOUT 600)  # two federations
  endif()
endif()
