#pragma once
// ChunkCursor: cuts the segments of a chunked transfer into Chunk messages of
// at most `chunk_bytes` each, segment after segment, each segment from its
// own first byte (0, or the resume offset of a transfer the receiver holds
// part of; docs/architecture.md, "Chunked transfer"). Every sender of chunks
// uses it: the device agent for updates, the coordinator for broadcasts.
// Device code: no heap; the segments are views the caller keeps alive.

#include <cstdint>

#include "fedrt/protocol/messages.h"
#include "fedrt/task/limits.h"

namespace fedrt::protocol {

class ChunkCursor {
 public:
  // Starts a transfer of `segments` (at most kMaxSegments) views; from[k]
  // (nullptr: all 0) is the first byte of segment k to send, clamped to its size.
  void start(const RoundId& id, uint32_t segments, const View<uint8_t>* payload, const uint64_t* from,
             uint32_t chunk_bytes) {
    *this = ChunkCursor{};
    if (segments > task::kMaxSegments) return;  // no such transfer: nothing to cut
    id_ = id;
    segments_ = segments;
    chunk_ = chunk_bytes;
    for (uint32_t k = 0; k < segments; ++k) {
      payload_[k] = payload[k];
      const uint64_t f = from == nullptr ? 0 : from[k];
      from_[k] = f < payload[k].size ? f : payload[k].size;
      skipped_ += from_[k];
    }
    offset_ = from_[0];
    active_ = segments > 0;
  }

  // The next chunk into `c`; false when every segment is sent (the transfer
  // is then no longer active).
  bool next(Chunk& c) {
    if (!active_) return false;
    while (segment_ < segments_ && offset_ >= payload_[segment_].size) {
      if (++segment_ < segments_) offset_ = from_[segment_];
    }
    if (segment_ >= segments_) {
      active_ = false;
      return false;
    }
    const View<uint8_t>& p = payload_[segment_];
    const uint64_t left = p.size - offset_;
    const uint32_t n = left < chunk_ ? static_cast<uint32_t>(left) : chunk_;
    c = Chunk{id_, segment_, offset_, p.size, View<uint8_t>{p.data + offset_, n}};
    offset_ += n;
    ++chunks_;
    return true;
  }

  // The bytes of segment 0 moved (a broadcast re-pointed at its model).
  void repoint(const uint8_t* data) { payload_[0].data = data; }
  void stop() { active_ = false; }
  bool active() const { return active_; }
  const RoundId& id() const { return id_; }
  uint32_t chunks() const { return chunks_; }   // chunks cut so far
  uint64_t skipped() const { return skipped_; }  // bytes not sent (the resume offsets)

 private:
  View<uint8_t> payload_[task::kMaxSegments];
  uint64_t from_[task::kMaxSegments] = {};
  uint64_t offset_ = 0;
  uint64_t skipped_ = 0;
  RoundId id_;
  uint32_t segments_ = 0;
  uint32_t chunk_ = 0;
  uint32_t segment_ = 0;
  uint32_t chunks_ = 0;
  bool active_ = false;
};

}  // namespace fedrt::protocol
