#pragma once
// fedrt-gateway (docs/gateways.md): a coordinator downstream, a device
// upstream. Downstream it serves its devices with the coordinator's wire
// protocol over TLS (their PSKs from its keys folder), so a device cannot
// tell it from the coordinator; upstream it is one client of the coordinator
// with its own identity. Per round it takes its devices' updates into a
// partial server session and hands up one aggregate of them
// (protocol/partial.h); in a secure round it relays the SecAgg+ messages and
// hands up the sum of their masked inputs. When its link fails it tries the
// next coordinator address, and again, until it is stopped. Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::net {

struct GatewayOptions {
  std::vector<std::string> coordinators;  // HOST:PORT, tried in turn
  std::string id;                         // its identity at the coordinator (KEYS/gateways.tsv)
  std::string keys;                       // KEYS/gateways/ID: gateway.psk, registry.tsv (its devices)
  std::string listen = "127.0.0.1";
  long port = 7434;                       // 0: any free port (written to port_file)
  std::string port_file;
  // PATH[,BAUD]: a microcontroller on each serial line, served as the
  // coordinator serves one (docs/microcontrollers.md, "A board on a serial line").
  std::vector<std::string> serial;
  long max_output_bytes = 8L << 20;       // per device connection, as the coordinator's
  long device_messages_per_s = 50;
  long device_message_burst = 500;
};

// Serves until the coordinator's Shutdown (Ok) or a fatal error.
Status RunGateway(const GatewayOptions& options);

}  // namespace fedrt::net
