#pragma once
// A broadcast longer than a device's chunk goes as an announcement that
// names its size and then Chunk frames cut as the connection drains
// (docs/architecture.md, "Chunked transfer"): one chunk per connection in
// memory, never a copy of the model. Used by the coordinator's rounds
// (coordinator/fleet_rounds.h) and by a gateway's (gateway/gateway.h). Host code.

#include <cstdint>
#include <functional>

#include "fedrt/coordinator/connection.h"
#include "fedrt/protocol/messages.h"

namespace fedrt::net {

// When the broadcast is longer than `limit` bytes: a.model_bytes is set and
// the values dropped (they follow in chunks); returns whether.
bool CutAnnouncement(protocol::Announcement& a, uint32_t limit);

// The chunks of round `id`'s broadcast of `total` bytes, cut from `model(id)`
// (read again before each chunk; null ends the stream: the round is over),
// `sent` told each frame's bytes.
Connection::Source BroadcastChunks(const protocol::RoundId& id, uint64_t total, uint32_t limit,
                                   std::function<const double*(const protocol::RoundId&)> model,
                                   std::function<void(uint64_t bytes)> sent);

}  // namespace fedrt::net
