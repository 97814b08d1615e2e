#pragma once
// The POSIX device's state file (<state dir>/session.state): the client
// session's persistent region (protocol/client_session.h state()) with what
// identifies it and the pending update that Hello announces after a restart.
// Two checksummed copies written in turn, so a power cut while one is written
// leaves the other: the old or the new state, never a torn one. Host code.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::net {

struct SavedSession {
  uint64_t fingerprint = 0;  // task::SessionFingerprint of the task, algorithm and run
  uint32_t algorithm = 0, run = 0, agent = 0;
  bool pending = false;
  uint32_t pending_round = 0;
  std::vector<uint8_t> state;  // the session's state region
};

// The digest a device logs of a session's persistent region ("committed ...
// state=", "restored ... state="): four FNV-1a-style lanes over 64-bit words,
// then the lanes and the length (a byte-wise hash of the state was 29% of a
// device's CPU at d = 65536).
uint64_t StateDigest(const uint8_t* p, size_t n);

// The saved session of `dir`, or nothing on a first start; a damaged file is
// an error naming it.
Result<std::optional<SavedSession>> LoadSavedSession(const std::string& dir);
// `durable`: fsync before the rename (a pending update must survive a power
// cut before it leaves). A commit need not be: if it is lost, the state still
// names the pending round, and the coordinator replays that round's result
// after the restart (docs/architecture.md, "Persistence").
Status SaveSession(const std::string& dir, const SavedSession& s, bool durable = true);
// The same with the state given apart (s.state unused): no copy of it is made.
Status SaveSession(const std::string& dir, const SavedSession& s, const uint8_t* state, size_t n, bool durable);

}  // namespace fedrt::net
