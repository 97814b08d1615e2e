# Firmware link tests, host presets: the firmware's local data (problem
# images, device code) and its nanopb codec against the host's protobuf-lite
# codec as unit tests, and the firmware's device client (fedrt-fw-host,
# fedrt-fw-host-lsa: the same code and mbedTLS/nanopb build as fedrt-fw and
# fedrt-fw-lsa) against the real coordinator: every family's iterates within
# float32 round-off of the simulator's, SecAgg+, refused tasks, and a
# misbehaving link (fw-link-relay: a corrupted TLS record, undecodable,
# oversized and huge frames are rejected with a status and the federation
# completes). The same scenarios under qemu-system-arm with the firmware
# images are registered by the cortex-m presets (cmake/firmware_app.cmake).
add_executable(fw_problem_image_test ${CMAKE_CURRENT_LIST_DIR}/problem_image_test.cc
               ${CMAKE_SOURCE_DIR}/runtime/src/fw/provision.cc)
target_include_directories(fw_problem_image_test PRIVATE ${CMAKE_SOURCE_DIR}/runtime/src/fw)
target_link_libraries(fw_problem_image_test PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fw_problem_image_test PROPERTIES LABELS device DISCOVERY_TIMEOUT 60)

if(TARGET fedrt_fw_nanopb AND TARGET fedrt_wire)
  # codec.cc compiled here (with the host's Status), nanopb code of the all-families image.
  add_executable(fw_codec_test ${CMAKE_CURRENT_LIST_DIR}/fw_codec_test.cc ${CMAKE_CURRENT_LIST_DIR}/fw_codec_privacy_test.cc
                 ${CMAKE_SOURCE_DIR}/runtime/src/fw/nanopb_codec.cc)
  target_link_libraries(fw_codec_test PRIVATE fedrt_wire fedrt_fw_nanopb GTest::gtest_main)
  target_include_directories(fw_codec_test PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)  # sample_task.h
  gtest_discover_tests(fw_codec_test PROPERTIES LABELS device DISCOVERY_TIMEOUT 60)
endif()

if(TARGET fedrt_net)  # also used by the cortex-m presets' QEMU link tests
  add_executable(fw-link-relay ${CMAKE_CURRENT_LIST_DIR}/fw_link_relay.cc)
  target_link_libraries(fw-link-relay PRIVATE fedrt_net CLI11::CLI11)
endif()
if(TARGET fedrt-fw-host)
  set(_run ${CMAKE_CURRENT_LIST_DIR}/run_fw_link.sh --bin ${CMAKE_BINARY_DIR}/bin)
  set(_out ${CMAKE_BINARY_DIR}/fw_link)
  foreach(mode corrupt-record bad-frames huge-frame)
    add_test(NAME fw_link_host_${mode} COMMAND ${_run} --out ${_out}/host-${mode} --fw 1 --native 1 --mode ${mode})
  endforeach()
  # Every family against the simulator (run_fw_link.sh --compare-sim states the float32 bound).
  add_test(NAME fw_link_host_fleet COMMAND ${_run} --out ${_out}/host-fleet --fw 2 --native 2 --compare-sim)
  add_test(NAME fw_link_host_dither COMMAND ${_run} --out ${_out}/host-dither --fw 2 --native 1 --compare-sim
           --config ${CMAKE_CURRENT_LIST_DIR}/experiment_dither.toml)
  add_test(NAME fw_link_host_lsa_image COMMAND ${_run} --out ${_out}/host-lsa-image --fw 2 --native 2 --compare-sim
           --host-client fedrt-fw-host-lsa --config ${CMAKE_CURRENT_LIST_DIR}/experiment_dither.toml)
  add_test(NAME fw_link_host_fedavg COMMAND ${_run} --out ${_out}/host-fedavg --fw 2 --native 2 --compare-sim
           --config ${CMAKE_CURRENT_LIST_DIR}/experiment_fedavg.toml)
  add_test(NAME fw_link_host_fedem COMMAND ${_run} --out ${_out}/host-fedem --fw 2 --native 2 --compare-sim
           --config ${CMAKE_CURRENT_LIST_DIR}/experiment_fedem.toml)
  # Distributed DP-FedAvg: the firmware client's noised SecAgg+ inputs (test_seed) against the simulator.
  add_test(NAME fw_link_host_fedavg_ddp COMMAND ${_run} --out ${_out}/host-fedavg-ddp --fw 2 --native 2 --compare-sim
           --config ${CMAKE_CURRENT_LIST_DIR}/experiment_fedavg_ddp.toml)
  # The firmware client on a pseudo-terminal served by the coordinator's --serial (docs/microcontrollers.md,
  # "A board on a serial line"), beside a TCP device: 3000 garbage bytes before device 0's first session,
  # and 2000 in the middle of the run (after 800 bytes of its own), each time a new session on the line.
  add_test(NAME fw_link_host_serial COMMAND ${_run} --out ${_out}/host-serial --fw 2 --native 1 --compare-sim
           --link pty --line-noise 3000)
  add_test(NAME fw_link_host_serial_midrun COMMAND ${_run} --out ${_out}/host-serial-midrun --fw 2 --native 1
           --compare-sim --link pty --line-noise 2000@800)
  # The same behind a gateway: fedrt-gateway serves the two lines, the coordinator sees one aggregate per round.
  add_test(NAME fw_link_host_serial_gateway COMMAND ${_run} --out ${_out}/host-serial-gateway --fw 2 --native 1
           --compare-sim --link pty --gateway)
  # Refused tasks: the LSA-only build and a workspace too small; the others run on.
  add_test(NAME fw_link_host_refuses_family COMMAND ${_run} --out ${_out}/host-refuses-family --fw 1 --native 2
           --host-client fedrt-fw-host-lsa --config ${CMAKE_CURRENT_LIST_DIR}/experiment_fedavg.toml
           --expect-refusal "does not include the task's algorithm family")
  add_test(NAME fw_link_host_refuses_memory COMMAND ${_run} --out ${_out}/host-refuses-memory --fw 1 --native 2
           --workspace-bytes 200 --expect-refusal "do not fit this device's memory")
  # Secure aggregation: the firmware client in SecAgg+ rounds equals the plain run.
  add_test(NAME fw_link_host_secagg
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_fw_secagg.sh --bin ${CMAKE_BINARY_DIR}/bin
                   --out ${_out}/host-secagg --fw 2 --native 2)
  set_tests_properties(fw_link_host_corrupt-record fw_link_host_bad-frames fw_link_host_huge-frame fw_link_host_fleet
                       fw_link_host_serial fw_link_host_serial_midrun fw_link_host_serial_gateway
                       fw_link_host_dither fw_link_host_lsa_image fw_link_host_fedavg fw_link_host_fedavg_ddp fw_link_host_fedem
                       fw_link_host_refuses_family fw_link_host_refuses_memory fw_link_host_secagg
                       PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 300)
  set_tests_properties(fw_link_host_secagg PROPERTIES TIMEOUT 600)
endif()

# The C API (runtime/include/fedrt/mcu_device.h): a device written in C99
# (-pedantic) drives full rounds through fedrt_poll over an in-memory
# transport against the real coordinator, on own-data shards; run_c_api.sh
# compares the rounds with a fleet of C++ devices (fedrt-device) on the same shards.
if(TARGET fedrt_fw_client AND TARGET fedrt-coordinator)
  add_executable(c_api_test ${CMAKE_CURRENT_LIST_DIR}/c_api_test.c)
  set_target_properties(c_api_test PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF LINKER_LANGUAGE CXX)
  target_compile_options(c_api_test PRIVATE -pedantic-errors -Wall -Wextra)
  target_link_libraries(c_api_test PRIVATE fedrt_fw_client)
  add_executable(c_api_unit_test ${CMAKE_CURRENT_LIST_DIR}/c_api_unit_test.c)
  set_target_properties(c_api_unit_test PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
                        LINKER_LANGUAGE CXX)
  target_compile_options(c_api_unit_test PRIVATE -pedantic-errors -Wall -Wextra)
  target_link_libraries(c_api_unit_test PRIVATE fedrt_fw_client m)
  add_test(NAME c_api_unit COMMAND c_api_unit_test)
  set_tests_properties(c_api_unit PROPERTIES LABELS device)
  set(_capi ${CMAKE_CURRENT_LIST_DIR}/run_c_api.sh --bin ${CMAKE_BINARY_DIR}/bin)
  add_test(NAME c_api_lsq_feed COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-lsq-feed --model least_squares
           --samples feed)
  add_test(NAME c_api_lsq_inplace COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-lsq-inplace
           --model least_squares --samples inplace)
  add_test(NAME c_api_logistic_pull COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-logistic-pull
           --model logistic --samples pull)
  # Softmax regression (K = 3, p = 5, d = 18): class labels, fed and in place.
  add_test(NAME c_api_softmax_feed COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-softmax-feed --model softmax
           --samples feed)
  add_test(NAME c_api_softmax_inplace COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-softmax-inplace
           --model softmax --samples inplace)
  add_test(NAME c_api_refuses_bad_shard COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-refusal
           --model least_squares --samples feed --expect-refusal "the device's samples have 4 features, the task's model has 5 and an intercept \\(d = 6\\)")
  add_test(NAME c_api_softmax_refuses_bad_shard COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-softmax-refusal
           --model softmax --samples feed --expect-refusal "the device's samples have 4 features, the task's softmax model has 5 \\(d = 18\\)")
  add_test(NAME c_api_softmax_refuses_bad_label COMMAND ${_capi} --out ${CMAKE_BINARY_DIR}/fw_link/c-api-softmax-label
           --model softmax --samples inplace --bad-label
           --expect-refusal "example 1: label is not a class of softmax regression with 3 classes \\(an integer 0..2\\)")
  set_tests_properties(c_api_lsq_feed c_api_lsq_inplace c_api_logistic_pull c_api_softmax_feed c_api_softmax_inplace
                       c_api_refuses_bad_shard c_api_softmax_refuses_bad_shard c_api_softmax_refuses_bad_label
                       PROPERTIES LABELS "device;integration" SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
