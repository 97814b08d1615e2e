#pragma once
// SegmentCoder: one segment of a device's uplink (docs/architecture.md,
// "Uplink"). Without a quantizer it sends the family's value as raw float64
// (the server aggregates the value itself); with one it sends the codec bytes
// of m = Q(g - V), g = value - start, and the server reconstructs
// start + V + m. V is the compression memory (DIANA; FedEM's V_c) and moves
// only in commit(), once the server has aggregated the message. Device code:
// memory from an Arena, no heap.

#include <cstdint>
#include <cstring>

#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/payload.h"
#include "fedrt/compression/diana.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::protocol {

template <class S>
class SegmentCoder {
 public:
  SegmentCoder() = default;

  // create()'s allocations: the difference link, `sent`, and one payload
  // buffer for the longer of the coded and the raw float64 encodings.
  static constexpr size_t ArenaBytes(int dim, const compression::QuantizerSpec& q) {
    return compression::CompressedDifference<S>::ArenaBytes(dim) + sizeof(S) * static_cast<size_t>(dim) +
           PayloadCapacity(dim, q) + 3 * Arena::kAlignment;
  }

  // memory: keep V (control variates); a raw uplink (kNone) keeps none unless
  // asked (FedEM's V_c with exact messages).
  static Result<SegmentCoder> create(Arena& arena, int dim, const compression::QuantizerSpec& q, bool memory) {
    auto link = compression::CompressedDifference<S>::create(arena, dim, q, memory);
    if (!link.ok()) return link.status();
    auto sent = arena.allocate<S>(static_cast<size_t>(dim));
    if (!sent.ok()) return sent.status();
    const size_t cap = PayloadCapacity(dim, q);
    auto payload = arena.allocate<uint8_t>(cap);
    if (!payload.ok()) return payload.status();
    SegmentCoder c;
    c.dim_ = dim;
    c.spec_ = q;
    c.link_ = *link;
    c.sent_ = sent->data;
    c.payload_ = payload->data;
    c.cap_ = cap;
    return c;
  }

  static constexpr size_t PayloadCapacity(int dim, const compression::QuantizerSpec& q) {
    return compression::MaxPayloadBytes(q, dim) > 8 * static_cast<size_t>(dim) ? compression::MaxPayloadBytes(q, dim)
                                                                                : 8 * static_cast<size_t>(dim);
  }

  // Raw uplink: payload = value as little-endian float64; the server takes the
  // value as it is (sent = value).
  Status encode_raw(const S* value) {
    for (int i = 0; i < dim_; ++i) {
      const double x = static_cast<double>(value[i]);
      if (!(x - x == 0.0)) return Status::InvalidArgument("uplink: the local result has a NaN or Inf entry");
      uint64_t u;
      std::memcpy(&u, &x, 8);
      for (int k = 0; k < 8; ++k) payload_[8 * i + k] = static_cast<uint8_t>(u >> (8 * k));
      sent_[i] = value[i];
    }
    len_ = 8 * static_cast<size_t>(dim_);
    return Status::Ok();
  }

  // Raw float32 (FedEM's V_{0,c}, already rounded to float): the server adds
  // the values; commit() makes them the memory V.
  Status encode_float32(const S* value) {
    for (int i = 0; i < dim_; ++i) {
      const float f = static_cast<float>(value[i]);
      if (!(f - f == 0.0f)) return Status::InvalidArgument("uplink: the local result has a NaN or Inf entry");
      uint32_t u;
      std::memcpy(&u, &f, 4);
      for (int k = 0; k < 4; ++k) payload_[4 * i + k] = static_cast<uint8_t>(u >> (8 * k));
      sent_[i] = static_cast<S>(f);
    }
    len_ = 4 * static_cast<size_t>(dim_);
    set_memory_on_commit_ = true;
    return Status::Ok();
  }

  // Coded uplink: m = Q(value - start - V) with draws from `rng`;
  // sent = start + V + m (start may be null: zero).
  Status encode(const S* value, const S* start, CounterRng& rng) {
    for (int i = 0; i < dim_; ++i) sent_[i] = start != nullptr ? value[i] - start[i] : value[i];
    auto n = link_.encode(sent_, rng, payload_, cap_, sent_);
    if (!n.ok()) return n.status();
    if (start != nullptr)
      for (int i = 0; i < dim_; ++i) sent_[i] += start[i];
    len_ = *n;
    return Status::Ok();
  }

  // The server aggregated the last message: V <- V + alpha m (or V = the
  // float32 values of encode_float32).
  void commit() {
    if (set_memory_on_commit_) {
      link_.set_memory(sent_);
      set_memory_on_commit_ = false;
      return;
    }
    if (spec_.kind != compression::QuantizerKind::kNone || link_.control_variate()) link_.commit();
  }
  void discard() { set_memory_on_commit_ = false; }

  // The b-bit fields of a rounding payload (secure aggregation's input x).
  Status integers(uint32_t* out) const {
    if (spec_.kind != compression::QuantizerKind::kRounding)
      return Status::FailedPrecondition("uplink: integers need the rounding quantizer");
    compression::BitReader r(payload_, len_);
    for (int i = 0; i < dim_; ++i)
      if (!r.get(spec_.bits, out[i])) return Status::Internal("uplink: payload shorter than d fields");
    return Status::Ok();
  }

  // After a restore of the arena bytes: the pending payload's length, and
  // whether its commit sets V (an initial FedEM exchange).
  void restore_length(size_t len) { len_ = len <= cap_ ? len : 0; }
  void restore_float32_pending() { set_memory_on_commit_ = true; }

  const uint8_t* payload() const { return payload_; }
  size_t payload_size() const { return len_; }
  const S* sent() const { return sent_; }  // what the server reconstructs
  const S* memory() const { return link_.memory(); }
  // V when this coder keeps it, else empty: all it carries between rounds (for parking).
  Span<uint8_t> rest() {
    if (!link_.control_variate()) return {};
    return Span<uint8_t>{reinterpret_cast<uint8_t*>(link_.mutable_memory()), sizeof(S) * static_cast<size_t>(dim_)};
  }
  int dim() const { return dim_; }

 private:
  int dim_ = 0;
  compression::QuantizerSpec spec_{};
  compression::CompressedDifference<S> link_;
  S* sent_ = nullptr;
  uint8_t* payload_ = nullptr;
  size_t cap_ = 0;
  size_t len_ = 0;
  bool set_memory_on_commit_ = false;
};

}  // namespace fedrt::protocol
