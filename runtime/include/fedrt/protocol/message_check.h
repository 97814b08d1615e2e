#pragma once
// The round messages' semantic checks, once for every codec
// (docs/architecture.md, "Wire"): a decoder maps the wire's fields into a
// ServerMessage or ClientMessage, refusing only what its own buffers cannot
// hold, and then asks Check() whether the message makes sense: finite
// models, a chunked broadcast that carries no values of its own, chunks of
// an existing segment that carry data, SecAgg+ lists no longer than a
// neighbourhood. The bounds of one platform's frames (a Linux device's, a
// firmware image's) stay with its codec. Device code, header-only.

#include <cstdint>

#include "fedrt/protocol/messages.h"
#include "fedrt/secagg/protocol.h"
#include "fedrt/task/limits.h"

namespace fedrt::protocol {

// What is wrong with a decoded message: nothing (kNone), its shape, a value
// that is NaN or infinite, or a chunk.
struct MessageFault {
  enum class Kind : uint8_t { kNone = 0, kMalformed, kNonFinite, kChunk };
  Kind kind = Kind::kNone;
  const char* why = nullptr;
  explicit operator bool() const { return kind != Kind::kNone; }
};

namespace message_check {
inline bool AllFinite(const View<double>& v) {
  for (uint32_t i = 0; i < v.size; ++i)
    if (!(v[i] - v[i] == 0.0)) return false;
  return true;
}
inline MessageFault CheckChunk(const Chunk& c) {
  if (c.segment >= task::kMaxSegments) return {MessageFault::Kind::kChunk, "chunk of a segment other than 0..1"};
  if (c.data.size == 0) return {MessageFault::Kind::kChunk, "chunk without data"};
  return {};
}
}  // namespace message_check

// A message from the server, as a device decoded it.
inline MessageFault Check(const ServerMessage& m) {
  using K = MessageFault::Kind;
  switch (m.kind) {
    case MessageKind::kAnnouncement: {
      const Announcement& a = m.announcement;
      if (!message_check::AllFinite(a.model)) return {K::kNonFinite, "broadcast value is NaN or infinite"};
      // Chunked (docs/architecture.md, "Chunked transfer"): the header alone, whole float64 values follow.
      if (a.model_bytes > 0 && (a.model.size > 0 || a.has_delta || a.model_bytes % 8 != 0 ||
                                a.model_bytes > 8ull * 2 * task::kMaxSegments * task::kMaxLinuxStreamDim))
        return {K::kMalformed, "chunked broadcast: values inline, or not whole float64s"};
      return {};
    }
    case MessageKind::kChunk: return message_check::CheckChunk(m.chunk);
    case MessageKind::kRoundResult:
      if (!message_check::AllFinite(m.result.model)) return {K::kNonFinite, "round result value is NaN or infinite"};
      return {};
    case MessageKind::kSecAggKeys:
      if (m.keys.peers.size > secagg::kMaxNeighbours) return {K::kMalformed, "SecAgg+: more peers than neighbours"};
      return {};
    case MessageKind::kSecAggSharesIn:
      if (m.shares.shares.size > secagg::kMaxNeighbours) return {K::kMalformed, "SecAgg+: more shares than neighbours"};
      return {};
    case MessageKind::kSecAggUnmaskRequest:
      if (m.unmask_request.survivors.size > secagg::kMaxNeighbours + 1)
        return {K::kMalformed, "SecAgg+: more survivors than neighbours + 1"};
      return {};
    case MessageKind::kSecAggChecks:
      if (m.checks.tags.size > secagg::kMaxNeighbours) return {K::kMalformed, "SecAgg+: more tags than neighbours"};
      return {};
    default: return {K::kMalformed, "not a round message a device takes"};
  }
}

// A message from a device, as the server decoded it.
inline MessageFault Check(const ClientMessage& m) {
  using K = MessageFault::Kind;
  switch (m.kind) {
    case MessageKind::kChunk: return message_check::CheckChunk(m.chunk);
    case MessageKind::kSecAggShares:
      if (m.shares.shares.size > secagg::kMaxNeighbours) return {K::kMalformed, "SecAgg+: more shares than neighbours"};
      return {};
    case MessageKind::kSecAggCheck:
      if (m.check.tags.size > secagg::kMaxNeighbours) return {K::kMalformed, "SecAgg+: more tags than neighbours"};
      return {};
    case MessageKind::kSecAggUnmask:
      if (m.unmask.shares.size > secagg::kMaxNeighbours + 1)
        return {K::kMalformed, "SecAgg+: more shares than neighbours + 1"};
      return {};
    case MessageKind::kUpdate:
    case MessageKind::kSecAggAdvertise:
    case MessageKind::kSecAggMasked: return {};
    default: return {K::kMalformed, "not a round message a device sends"};
  }
}

}  // namespace fedrt::protocol
