#include "fedrt/protocol/server_uplink.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/payload.h"

namespace fedrt::protocol {

using compression::QuantizerKind;

Status ServerUplink::init(const task::Task& task, const ServerCore& core, uint32_t agents) {
  q_ = task.compression.quantizer;
  chains_ = core.chains();
  seg_ = core.segment_dim();
  message_only_ = core.family() == task::Family::kEm;
  memory_ = message_only_ ? false : task.compression.control_variates;
  if (message_only_) {
    mode_ = q_.kind == QuantizerKind::kRounding ? Mode::kInteger : Mode::kCoded;
  } else if (q_.kind == QuantizerKind::kNone) {
    mode_ = Mode::kRaw;
  } else if (q_.kind == QuantizerKind::kRounding) {
    mode_ = Mode::kInteger;  // exact integer sums, with or without memories (then W)
  } else {
    mode_ = Mode::kCoded;
  }
  if (task.secagg.enabled && mode_ != Mode::kInteger)
    return Status::InvalidArgument("secure aggregation needs the rounding quantizer's integer uplink");
  rec_ = core.reconstruction(q_.kind != QuantizerKind::kNone);
  alpha_ = compression::ControlVariateStep(q_, seg_);
  agents_ = agents;
  const size_t n = static_cast<size_t>(chains_) * seg_;
  w_.assign(keeps_sum() ? n : 0, 0.0);
  const size_t msum_n = mode_ == Mode::kCoded && keeps_sum() ? n : 0;
  msum_memory_.assign(ExactSumArray::ArenaBytes(msum_n), 0);
  Arena msum_arena(msum_memory_.data(), msum_memory_.size());
  FEDRT_ASSIGN_OR_RETURN(msum_, ExactSumArray::create(msum_arena, msum_n));
  // Sized where first needed: a chunked raw uplink (large d) never needs the
  // whole-segment buffers, and only the integer uplink keeps integer sums.
  isum_.assign(mode_ == Mode::kInteger ? static_cast<size_t>(chains_) * seg_ : 0, 0);
  scratch_.clear();
  value_.clear();
  return Status::Ok();
}

Encoding ServerUplink::expected_encoding(bool initial) const {
  if (initial) return Encoding::kRawFloat32;
  return mode_ == Mode::kRaw ? Encoding::kRawFloat64 : Encoding::kCodec;
}

void ServerUplink::start_round() {
  std::fill(isum_.begin(), isum_.end(), 0);
  msum_.clear();
}

Result<uint64_t> ServerUplink::accept(uint32_t /*agent*/, const Update& u, const double* announced, ServerCore& core) {
  const bool initial = u.id.round == kInitRound;
  const Encoding want = expected_encoding(initial);
  if (u.encoding != want)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("payload encoding {}, this round takes {}", static_cast<int>(u.encoding),
                              static_cast<int>(want)));
  const uint32_t segments = initial ? 1u : chains_;
  if (u.segments != segments)
    return Status(StatusCode::kInvalidArgument, fmt::format("{} payload segments, expected {}", u.segments, segments));
  uint64_t bits = 0;
  scratch_.resize(static_cast<size_t>(chains_) * seg_);
  value_.resize(static_cast<size_t>(seg_));
  // Validate every segment before anything moves.
  for (uint32_t k = 0; k < segments; ++k) {
    const View<uint8_t>& p = u.payload[k];
    double* m = scratch_.data() + static_cast<size_t>(k) * seg_;
    bits += 8ull * p.size;
    if (initial) {  // FedEM's V_{0,c}: float32 values
      if (p.size != 4u * static_cast<uint32_t>(seg_))
        return Status(StatusCode::kOutOfRange,
                      fmt::format("initial control variate of {} bytes, expected {}", p.size, 4 * seg_));
      for (int i = 0; i < seg_; ++i) {
        uint32_t w = 0;
        for (int b = 0; b < 4; ++b) w |= static_cast<uint32_t>(p.data[4 * i + b]) << (8 * b);
        float f;
        std::memcpy(&f, &w, 4);
        if (!std::isfinite(f)) return Status(StatusCode::kInvalidArgument, std::string("initial control variate has a NaN or Inf entry"));
        m[i] = f;
      }
      continue;
    }
    const compression::QuantizerSpec raw{};  // kNone: d little-endian float64 values
    Status st = compression::Decode<double>(mode_ == Mode::kRaw ? raw : q_, p.data, p.size, seg_, m);
    if (!st.ok())
      return Status(st.code(), fmt::format("segment {} ({} bytes) rejected: {}", k, p.size, st.message()));
  }
  if (initial) {
    core.add_initial(scratch_.data());
    return bits;
  }
  double sq = 0;
  for (uint32_t k = 0; k < segments; ++k)
    sq = add_update_squares(k, 0, scratch_.data() + static_cast<size_t>(k) * seg_, seg_, announced, core, sq);
  if (over_norm(std::sqrt(sq))) return Status(StatusCode::kResourceExhausted, over_norm_reason());
  for (uint32_t k = 0; k < segments; ++k) {
    const double* m = scratch_.data() + static_cast<size_t>(k) * seg_;
    if (mode_ == Mode::kInteger) {  // the payload's b-bit fields (validated above)
      compression::BitReader r(u.payload[k].data, u.payload[k].size);
      uint64_t* s = isum_.data() + static_cast<size_t>(k) * seg_;
      for (int i = 0; i < seg_; ++i) {
        uint32_t x = 0;
        (void)r.get(q_.bits, x);
        s[i] += x;
      }
      continue;
    }
    if (mode_ == Mode::kRaw || rec_ == Reconstruction::kMessage) {
      core.add(k, m);
      continue;
    }
    if (keeps_sum()) {  // S_m += m, exactly (any arrival order gives the same bits)
      const size_t off = static_cast<size_t>(k) * seg_;
      for (int i = 0; i < seg_; ++i) msum_.add(off + i, m[i]);
      continue;
    }
    // No memories: start + m.
    const double* start = core.start(k, announced);
    for (int i = 0; i < seg_; ++i) value_[i] = (start != nullptr ? start[i] : 0.0) + m[i];
    core.add(k, value_.data());
  }
  return bits;
}

double ServerUplink::add_update_squares(uint32_t k, int first, const double* values, int n, const double* announced,
                                       const ServerCore& core, double sq) const {
  const double* start = mode_ == Mode::kRaw ? core.start(k, announced) : nullptr;  // coded: m is the difference
  for (int i = 0; i < n; ++i) {
    const double x = values[i] - (start != nullptr ? start[first + i] : 0.0);
    sq += x * x;
  }
  return sq;
}

std::string ServerUplink::over_norm_reason() const {
  return fmt::format("update longer than robustness.max_update_norm {:g} (L2 norm of what it adds to the broadcast, "
                     "or not finite): dropped from the round, the others' result is unchanged",
                     max_norm_);
}

Status ServerUplink::check_stream(const Update& h) const {
  const bool initial = h.id.round == kInitRound;
  const Encoding want = expected_encoding(initial);
  if (h.encoding != want)
    return Status(StatusCode::kInvalidArgument, fmt::format("payload encoding {}, this round takes {}",
                                                            static_cast<int>(h.encoding), static_cast<int>(want)));
  const uint32_t segments = initial ? 1u : chains_;
  if (h.segments != segments)
    return Status(StatusCode::kInvalidArgument, fmt::format("{} payload segments, expected {}", h.segments, segments));
  const uint64_t seg = static_cast<uint64_t>(seg_);
  for (uint32_t k = 0; k < segments; ++k) {
    const uint64_t n = h.payload_bytes[k];
    const bool exact = initial || mode_ == Mode::kRaw;
    const uint64_t want_bytes = initial ? 4 * seg : mode_ == Mode::kRaw ? 8 * seg : compression::MaxPayloadBytes(q_, seg_);
    if (n == 0 || (exact ? n != want_bytes : n > want_bytes))
      return Status(StatusCode::kOutOfRange, fmt::format("segment {} announced as {} bytes, expected {}{}", k, n,
                                                         exact ? "" : "at most ", want_bytes));
  }
  return Status::Ok();
}

Status ServerUplink::add_chunk(uint32_t k, uint64_t offset, const uint8_t* data, size_t n, bool negate,
                               ServerCore& core) {
  if (offset % 8 != 0 || n % 8 != 0)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("raw float64 chunk at byte {} of {} bytes is not cut at whole values", offset, n));
  const int first = static_cast<int>(offset / 8), count = static_cast<int>(n / 8);
  if (first + count > seg_) return Status(StatusCode::kOutOfRange, "raw float64 chunk past the segment");
  if (value_.size() < static_cast<size_t>(count)) value_.resize(static_cast<size_t>(count));
  double* v = value_.data();
  const compression::QuantizerSpec raw{};  // kNone: little-endian float64, every value finite
  Status st = compression::Decode<double>(raw, data, n, count, v);
  if (!st.ok()) return Status(st.code(), fmt::format("{} (entries {} to {})", st.message(), first, first + count - 1));
  core.add_part(k, first, count, v, negate);
  return Status::Ok();
}

void ServerUplink::count_stream(ServerCore& core) const {
  for (uint32_t k = 0; k < chains_; ++k) core.count(k);
}

void ServerUplink::close(uint32_t m, const uint32_t* secure_sum, const double* announced, ServerCore& core) {
  if (m == 0 || !closes_round()) return;
  value_.resize(static_cast<size_t>(seg_));
  const double delta = 2.0 * q_.clip / static_cast<double>((1u << q_.bits) - 1u);
  const double md = static_cast<double>(m);
  // W/N as (W |S|/N) / |S|: with everyone (|S| = N) the value is (W + S_m)/N to the bit.
  const double share = md / static_cast<double>(agents_);
  for (uint32_t k = 0; k < chains_; ++k) {
    const size_t off = static_cast<size_t>(k) * seg_;
    auto isum = [&](int i) {  // the integer sum S
      return secure_sum != nullptr ? static_cast<double>(secure_sum[off + i]) : static_cast<double>(isum_[off + i]);
    };
    auto msum = [&](int i) {  // S_m: the members' messages summed (integer: Delta S - |S| clip)
      return mode_ == Mode::kCoded ? msum_.value(off + i) : isum(i) * delta - md * q_.clip;
    };
    if (message_only_) {  // FedEM: sum_c m_c
      for (int i = 0; i < seg_; ++i) value_[i] = msum(i);
      core.add_message_sum(value_.data());
      continue;
    }
    const double* start = core.start(k, announced);
    if (!memory_) {  // integer mode: start + Delta S / |S| - clip
      for (int i = 0; i < seg_; ++i) value_[i] = (start != nullptr ? start[i] : 0.0) + isum(i) * delta / md - q_.clip;
    } else {  // start + W/N + S_m/|S|; W <- W + alpha S_m
      double* w = w_.data() + off;
      for (int i = 0; i < seg_; ++i) {
        const double sm = msum(i);
        value_[i] = (start != nullptr ? start[i] : 0.0) + (w[i] * share + sm) / md;
        w[i] += alpha_ * sm;
      }
    }
    core.add_mean(k, value_.data(), m);
  }
}

}  // namespace fedrt::protocol
