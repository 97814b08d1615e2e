#pragma once
// The keys folder fedrt-keys writes and extends (README.md, "Deployment on a
// real network" and "Devices during a run"), every file mode 0600 and every
// folder 0700:
//
//   DIR/ca.crt ca.key coordinator.crt coordinator.key
//   DIR/registry.tsv    id<TAB>index<TAB>psk_hex (the coordinator's copy)
//   DIR/revoked.tsv     id<TAB>revoked_at<TAB>reason (revocations.h)
//   DIR/devices/ID/{ca.crt, device.crt, device.key, device.psk}  (copy to board ID)
//
// A device's id is PREFIX + its agent index on four digits, its certificate
// (CN = id) has serial 100 + index. registry.tsv and revoked.tsv are replaced
// atomically, so a running coordinator that polls them never reads half a
// file. Host only.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/keys/revocations.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net {

// What `out` already holds of a fleet ("ca.key", "registry.tsv", "3 device
// folders", ...); empty when nothing.
std::vector<std::string> FleetFiles(const std::string& out);

// A fresh fleet in `out`: a new CA, the coordinator's certificate and
// devices PREFIX0000 .. with agent indices 0 .. devices-1. A folder that
// already holds a fleet (FleetFiles) is refused (ALREADY_EXISTS: its devices
// would keep credentials of the old CA) unless `replace`; then the old fleet
// goes whole: its device folders and its revoked.tsv (whose ids would name
// the new devices) are removed before the new one is written.
Status ProvisionFleet(const std::string& out, uint32_t devices, const std::string& prefix, bool replace = false);

// The prefix the registry's ids share when every id is PREFIX + its index on
// four digits (the form ProvisionFleet writes); "dev" otherwise or when empty.
std::string RegistryPrefix(const std::vector<RegistryEntry>& entries);

struct NewDevice {
  std::string id;
  uint32_t index = 0;
  std::string dir;  // KEYS/devices/ID
};

// `count` more devices in the existing folder `keys`: certificates signed by
// its CA (ca.key, ca.crt), agent indices after the registry's largest, ids
// PREFIX + index (prefix "": RegistryPrefix). An id already in the registry,
// or whose folder exists, is refused before anything is written. The
// devices' folders are written first, then registry.tsv is replaced.
Result<std::vector<NewDevice>> AddDevices(const std::string& keys, uint32_t count, const std::string& prefix);

struct RevokeOutcome {
  std::vector<Revocation> revoked;  // newly listed
  std::vector<Revocation> already;  // were listed before (as the file had them)
};

// Lists `ids` in keys/revoked.tsv with `reason` at `now` (unix seconds).
// Every id must be in keys/registry.tsv: otherwise the error names the
// unknown ones and nothing is written. An id already listed keeps its entry.
Result<RevokeOutcome> RevokeDevices(const std::string& keys, const std::vector<std::string>& ids,
                                    const std::string& reason, double now);

// keys rotate: every device of `ids` gets a new key, certificate (same CN,
// signed by the folder's CA, a random serial) and PSK, its files replaced
// atomically, then its registry.tsv line (same id and agent index: the
// device's state is kept). An id not in the registry is refused before
// anything is written. A running coordinator picks the new PSKs up within a
// second, refuses the old ones and drops the devices' current connections.
Result<std::vector<NewDevice>> RotateDevices(const std::string& keys, const std::vector<std::string>& ids);

// A server's key and certificate (CN=fedrt-coordinator, the name devices in
// certificate mode verify), signed by the folder's CA with a random serial:
// DIR/NAME.key and DIR/NAME.crt, each replaced atomically. The coordinator's
// (keys rotate --coordinator) and each gateway's (fedrt-keys gateways), so a
// device cannot tell a gateway from the coordinator.
Status IssueServerCertificate(const std::string& keys, const std::string& dir, const std::string& name);

// keys rotate --coordinator: a new key and certificate for the coordinator,
// signed by the folder's CA, so devices that verify it against the CA
// (certificate mode) accept it unchanged. Read at the coordinator's start.
Status RotateCoordinator(const std::string& keys);

}  // namespace fedrt::net
