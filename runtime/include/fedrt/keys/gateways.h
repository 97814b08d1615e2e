#pragma once
// Gateways in the keys folder (docs/gateways.md, "Deploy with gateways"):
//
//   DIR/gateways.tsv            id<TAB>psk_hex<TAB>device ids (comma-separated)
//                               the coordinator's copy: who may speak for whom
//   DIR/gateways/ID/gateway.psk the gateway's own PSK (identity ID), for its upstream link
//   DIR/gateways/ID/registry.tsv its devices' lines of DIR/registry.tsv (their PSKs)
//   DIR/gateways/ID/{ca.crt, gateway.crt, gateway.key}: for its devices in
//                               certificate mode (a server certificate like the coordinator's)
//
// `fedrt-keys gateways --keys DIR --count G` puts device index i behind
// gateway gw(i mod G). Every file mode 0600, every folder 0700; the files are
// replaced atomically, so the command can be run again. Host only.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net {

struct GatewayEntry {
  std::string id;
  SecretBytes psk;
  std::vector<std::string> devices;
};

// The gateway id of index g: "gw" + g on two digits.
std::string GatewayId(uint32_t g);

// Writes G gateways for the devices of DIR/registry.tsv; returns their folders.
Result<std::vector<std::string>> ProvisionGateways(const std::string& keys, uint32_t count);

// Reads DIR/gateways.tsv; a missing file is no gateway. Errors name the line.
Result<std::vector<GatewayEntry>> LoadGateways(const std::string& path);

}  // namespace fedrt::net
