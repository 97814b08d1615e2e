#pragma once
// Revoked devices (docs/security.md, "Devices during a run"): KEYS/revoked.tsv, written
// by `fedrt-keys revoke` and read by the coordinator, which refuses a revoked
// id at its next handshake. One line per device after a '#' header:
//
//   id<TAB>revoked_at (unix seconds)<TAB>reason
//
// The file is replaced atomically (mode 0600), so a reader polling it sees
// the old list or the new one. Host only.

#include <string>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::net {

struct Revocation {
  std::string id;
  double revoked_at = 0.0;  // seconds since the epoch
  std::string reason;
};

// The list in file order; a missing file is an empty list; a malformed line
// is an error naming file:line.
Result<std::vector<Revocation>> ReadRevocations(const std::string& path);

// Writes the list atomically (PATH.tmp, fsync, rename), mode 0600. Reasons
// are cleaned with CleanReason; an id that is empty or holds white space is
// an error (nothing is written).
Status WriteRevocations(const std::string& path, const std::vector<Revocation>& list);

// A reason as the file holds it: one line (tabs, carriage returns and
// newlines become spaces), at most kMaxReasonBytes bytes (cut at a UTF-8
// character boundary).
constexpr size_t kMaxReasonBytes = 200;
std::string CleanReason(const std::string& reason);

}  // namespace fedrt::net
