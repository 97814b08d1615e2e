#pragma once
// KeysWatch: the keys folder while a coordinator runs (docs/dashboard.md,
// "Devices while running"). `keys add` rewrites registry.tsv and `keys
// revoke` revoked.tsv, each by an atomic rename; the coordinator polls once a
// second, and a file whose modification time or size changed is read again.
// Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/keys/revocations.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net {

class KeysWatch {
 public:
  explicit KeysWatch(std::string keys_dir);

  struct Changes {
    bool registry = false;  // registry.tsv changed: `entries` holds all of it
    std::vector<RegistryEntry> entries;
    bool revoked = false;  // revoked.tsv changed: `revocations` holds all of it
    std::vector<Revocation> revocations;
  };
  // What changed since the last call (the first call reads both files). A
  // file that fails to parse is an error once, and is read again when it changes.
  Result<Changes> poll();

 private:
  struct Stamp {
    int64_t mtime_ns = -1;
    int64_t size = -1;
    bool operator!=(const Stamp& o) const { return mtime_ns != o.mtime_ns || size != o.size; }
  };
  static Stamp StampOf(const std::string& path);
  std::string registry_path_, revoked_path_;
  Stamp registry_, revoked_;
};

}  // namespace fedrt::net
