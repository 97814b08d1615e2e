# The real system: wire format (protobuf-lite), TLS (mbedTLS 3.6, cmake/host_mbedtls.cmake), the
# Linux device, keys, the operator's view and the coordinator (standalone
# Asio, SQLite): one library each (docs/architecture.md, "Layers").
find_package(Protobuf REQUIRED)
find_package(PkgConfig REQUIRED)
if(NOT FEDRT_DEVICE_ONLY)  # coordinator only
  pkg_check_modules(FEDRT_SQLITE REQUIRED IMPORTED_TARGET sqlite3)
  # The coordinator's HTTP endpoint (dashboard, JSON, Prometheus): Debian's
  # compiled cpp-httplib, whose header must see the library's own build flags.
  pkg_check_modules(FEDRT_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
endif()
find_path(FEDRT_ASIO_INCLUDE asio.hpp REQUIRED)  # coordinator and gateway (header-only)
find_library(FEDRT_PROTOBUF_LITE protobuf-lite REQUIRED)

set(FEDRT_WIRE_OUT ${CMAKE_BINARY_DIR}/generated/wire)
file(MAKE_DIRECTORY ${FEDRT_WIRE_OUT})
add_custom_command(
  OUTPUT ${FEDRT_WIRE_OUT}/fedrt.pb.cc ${FEDRT_WIRE_OUT}/fedrt.pb.h ${FEDRT_WIRE_OUT}/fedrt_gateway.pb.cc
         ${FEDRT_WIRE_OUT}/fedrt_gateway.pb.h
  COMMAND protobuf::protoc --cpp_out=${FEDRT_WIRE_OUT} -I ${CMAKE_CURRENT_SOURCE_DIR}/runtime/wire
          ${CMAKE_CURRENT_SOURCE_DIR}/runtime/wire/fedrt.proto ${CMAKE_CURRENT_SOURCE_DIR}/runtime/wire/fedrt_gateway.proto
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/runtime/wire/fedrt.proto ${CMAKE_CURRENT_SOURCE_DIR}/runtime/wire/fedrt_gateway.proto
          protobuf::protoc
  COMMENT "protoc fedrt.proto fedrt_gateway.proto (LITE_RUNTIME)")

# Generated code: no warnings flags of ours.
add_library(fedrt_wire_proto STATIC ${FEDRT_WIRE_OUT}/fedrt.pb.cc ${FEDRT_WIRE_OUT}/fedrt_gateway.pb.cc)
target_include_directories(fedrt_wire_proto SYSTEM PUBLIC ${FEDRT_WIRE_OUT} ${Protobuf_INCLUDE_DIRS})
target_link_libraries(fedrt_wire_proto PUBLIC ${FEDRT_PROTOBUF_LITE})
target_compile_options(fedrt_wire_proto PRIVATE -w)

# The round protocol's messages and the task on the wire (frames, codec).
add_library(fedrt_wire STATIC runtime/src/wire/frame.cc runtime/src/wire/protobuf_codec.cc runtime/src/wire/protobuf_inbound.cc
  runtime/src/wire/gateway_codec.cc)
target_link_libraries(fedrt_wire PUBLIC fedrt_config fedrt_wire_proto)

# TLS (mbedTLS) for both sides: sessions, credentials, the random source.
add_library(fedrt_tls STATIC runtime/src/tls/tls.cc runtime/src/tls/psk_files.cc
            runtime/src/tls/key_exchange.cc)
target_link_libraries(fedrt_tls PUBLIC fedrt_core ${FEDRT_MBEDTLS} ${FEDRT_MBEDX509} ${FEDRT_MBEDCRYPTO})

# The Linux device (docs/device-api.md): the public fedrt::Device, its
# session and connection over TLS. Exactly what the ARM boards build.
add_library(fedrt_linux_device STATIC
  runtime/src/device/state.cc
  runtime/src/device/cli.cc
  runtime/src/device/session.cc
  runtime/src/device/connection.cc
  runtime/src/device/device_api.cc
  runtime/src/device/driver.cc)
target_link_libraries(fedrt_linux_device PUBLIC fedrt_tls fedrt_config fedrt_wire CLI11::CLI11)
add_executable(fedrt-device runtime/apps/fedrt_device.cc)
target_link_libraries(fedrt-device PRIVATE fedrt_linux_device fedrt_cli)

# The coordinator's side of a device's connection (TLS over a TCP socket or a
# serial line, frames, bounds, refusals logged within a quota, chunked
# broadcasts): the coordinator's and the gateway's, so a board builds it too.
add_library(fedrt_downstream STATIC
  runtime/src/coordinator/token_bucket.cc
  runtime/src/coordinator/refusal_log.cc
  runtime/src/coordinator/transport.cc
  runtime/src/coordinator/serial_line.cc
  runtime/src/coordinator/connection.cc
  runtime/src/coordinator/broadcast_stream.cc)
target_include_directories(fedrt_downstream SYSTEM PUBLIC ${FEDRT_ASIO_INCLUDE})
target_compile_definitions(fedrt_downstream PUBLIC ASIO_STANDALONE ASIO_NO_DEPRECATED)
target_link_libraries(fedrt_downstream PUBLIC fedrt_tls fedrt_wire fedrt_protocol fedrt_log)

# The gateway (docs/gateways.md): its devices over fedrt_downstream, a partial server session per round, one link up.
add_library(fedrt_gateway STATIC runtime/src/gateway/gateway.cc runtime/src/gateway/upstream.cc)
target_link_libraries(fedrt_gateway PUBLIC fedrt_downstream)
add_executable(fedrt-gateway runtime/apps/fedrt_gateway.cc)
target_link_libraries(fedrt-gateway PRIVATE fedrt_gateway fedrt_cli)

if(FEDRT_DEVICE_ONLY)  # ARM boards (cmake/cross_linux.cmake): fedrt-device and fedrt-gateway, no coordinator or SQLite
  add_library(fedrt_net INTERFACE)
  target_link_libraries(fedrt_net INTERFACE fedrt_linux_device)
  return()
endif()

# The dashboard's static files, compiled into the coordinator (ops/dashboard_assets.h).
set(FEDRT_DASHBOARD_DIR ${CMAKE_CURRENT_SOURCE_DIR}/runtime/web/dashboard)
set(FEDRT_DASHBOARD_FILES index.html format.js charts.js dashboard.js dashboard.css)
set(FEDRT_DASHBOARD_CC ${CMAKE_BINARY_DIR}/generated/dashboard_assets.cc)
list(TRANSFORM FEDRT_DASHBOARD_FILES PREPEND ${FEDRT_DASHBOARD_DIR}/ OUTPUT_VARIABLE FEDRT_DASHBOARD_PATHS)
string(REPLACE ";" "," FEDRT_DASHBOARD_LIST "${FEDRT_DASHBOARD_FILES}")
add_custom_command(
  OUTPUT ${FEDRT_DASHBOARD_CC}
  COMMAND ${CMAKE_COMMAND} -DOUT=${FEDRT_DASHBOARD_CC} -DDIR=${FEDRT_DASHBOARD_DIR}
          -DFILES=${FEDRT_DASHBOARD_LIST} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_assets.cmake
  DEPENDS ${FEDRT_DASHBOARD_PATHS} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_assets.cmake
  COMMENT "embedding the dashboard (runtime/web/dashboard)" VERBATIM)

# Keys: provisioning (fedrt-keys), the registry, revocations, and the watch
# that brings changes into a running coordinator.
add_library(fedrt_keys STATIC
  runtime/src/keys/provision.cc
  runtime/src/keys/watch.cc
  runtime/src/keys/registry.cc
  runtime/src/keys/revocations.cc
  runtime/src/keys/private_file.cc
  runtime/src/keys/gateways.cc)
target_link_libraries(fedrt_keys PUBLIC fedrt_tls fmt::fmt)

# The operator's view: the fleet monitor, the HTTP endpoint and its dashboard.
add_library(fedrt_ops STATIC
  runtime/src/ops/fleet_monitor.cc
  runtime/src/ops/http_endpoint.cc
  runtime/src/ops/http_gate.cc
  ${FEDRT_DASHBOARD_CC})
target_include_directories(fedrt_ops SYSTEM PUBLIC ${FEDRT_ASIO_INCLUDE})
target_compile_definitions(fedrt_ops PUBLIC ASIO_STANDALONE ASIO_NO_DEPRECATED)
target_link_libraries(fedrt_ops PUBLIC fedrt_tls fedrt_protocol nlohmann_json::nlohmann_json fmt::fmt PkgConfig::FEDRT_HTTPLIB)

# The coordinator: event loop, connections, admission, the rounds, SQLite state.
add_library(fedrt_coordinator STATIC
  runtime/src/coordinator/network_config.cc
  runtime/src/coordinator/state_store.cc
  runtime/src/coordinator/state_vectors.cc
  runtime/src/coordinator/state_devices.cc
  runtime/src/coordinator/state_watermark.cc
  runtime/src/coordinator/rollback_check.cc
  runtime/src/coordinator/peer_rate_limit.cc
  runtime/src/coordinator/fleet_rounds.cc
  runtime/src/coordinator/async_rounds.cc
  runtime/src/coordinator/fleet_result.cc
  runtime/src/coordinator/privacy_rounds.cc
  runtime/src/coordinator/startup_checks.cc
  runtime/src/coordinator/coordinator.cc
  runtime/src/coordinator/device_messages.cc
  runtime/src/coordinator/gateway_links.cc
  runtime/src/coordinator/operator.cc
  runtime/src/coordinator/accept.cc
  runtime/src/coordinator/cli.cc
  runtime/src/coordinator/view.cc)
target_link_libraries(fedrt_coordinator PUBLIC fedrt_downstream fedrt_ops fedrt_keys fedrt_tls fedrt_config fedrt_protocol fedrt_sim
  fedrt_report fedrt_privacy fedrt_wire fedrt_log CLI11::CLI11 PkgConfig::FEDRT_SQLITE)

# Everything networked, for tests and benchmarks that run both sides.
add_library(fedrt_net INTERFACE)
target_link_libraries(fedrt_net INTERFACE fedrt_coordinator fedrt_linux_device fedrt_keys)

add_executable(fedrt-keys runtime/apps/fedrt_keys.cc)
target_link_libraries(fedrt-keys PRIVATE fedrt_keys fedrt_log fedrt_cli fmt::fmt)
# The run's state from the coordinator's SQLite file, up or down (docs/fleet.md, "A run's state: `./fedrt status`").
add_executable(fedrt-status runtime/apps/fedrt_status.cc)
target_link_libraries(fedrt-status PRIVATE fedrt_coordinator fedrt_cli nlohmann_json::nlohmann_json)
add_executable(fedrt-coordinator runtime/apps/fedrt_coordinator.cc)
target_link_libraries(fedrt-coordinator PRIVATE fedrt_coordinator fedrt_cli)


if(FEDRT_BUILD_BENCH)
  # Load benchmark (./fedrt bench runs it after fedrt-bench).
  add_executable(fedrt-net-bench bench/fedrt_net_bench.cc)
  target_link_libraries(fedrt-net-bench PRIVATE fedrt_net fedrt_cli)
  add_dependencies(fedrt-net-bench fedrt-coordinator)
  # Round latency per phase with real processes (./fedrt bench runs it too).
  add_executable(fedrt-net-latency bench/fedrt_net_latency.cc)
  target_link_libraries(fedrt-net-latency PRIVATE CLI11::CLI11 fmt::fmt)
  add_dependencies(fedrt-net-latency fedrt-coordinator fedrt-device fedrt-keys)
  # Large models: round time, bytes through TLS vs the cipher, coordinator RSS (./fedrt bench).
  add_executable(fedrt-model-bench bench/fedrt_model_bench.cc)
  target_link_libraries(fedrt-model-bench PRIVATE fedrt_net CLI11::CLI11 fmt::fmt)
  add_dependencies(fedrt-model-bench fedrt-coordinator fedrt-device fedrt-keys)
  # Many devices in one process over TLS, flat or behind gateways (bench/gateway_scale_bench.py, docs/gateways.md).
  add_executable(fedrt-swarm bench/fedrt_swarm.cc)
  target_link_libraries(fedrt-swarm PRIVATE fedrt_coordinator fedrt_cli)
endif()
