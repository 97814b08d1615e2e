// ServerSession's chunked updates (docs/architecture.md, "Chunked
// transfer"): the header, the chunks in order, resumption after a
// reconnect, and the update taken back when the round closes without it.
#include <algorithm>

#include <fmt/format.h>

#include "fedrt/protocol/server_session.h"

namespace fedrt::protocol {

namespace {
uint64_t SegmentStart(const Update& h, uint32_t k) {  // segments follow each other in the journal
  uint64_t start = 0;
  for (uint32_t j = 0; j < k; ++j) start += h.payload_bytes[j];
  return start;
}
}  // namespace

uint64_t ServerSession::upload_received(uint32_t agent) const {
  if (agent >= uploads_.size() || !uploads_[agent].active) return 0;
  uint64_t n = 0;
  for (uint64_t r : uploads_[agent].received) n += r;
  return n;
}

// The header of a chunked update (the round checks of on_update passed).
Verdict ServerSession::begin_upload(uint32_t agent, const Update& h) {
  Upload& up = uploads_[agent];
  if (up.active && up.header.id == h.id) {  // the device reconnected: go on where it was cut off
    const Update& was = up.header;
    bool same = was.encoding == h.encoding && was.segments == h.segments;
    for (uint32_t k = 0; k < h.segments && same; ++k) same = was.payload_bytes[k] == h.payload_bytes[k];
    if (!same)
      return Verdict{Refusal::kChunk, fmt::format("a different update for round {} is already in flight ({} bytes taken)",
                                                  h.id.round, upload_received(agent))};
    up.header.report = h.report;
    up.header.sample_count = h.sample_count;
    return Verdict{};
  }
  if (up.active) abort_upload(agent);
  Status st = uplink_.check_stream(h);
  if (!st.ok())
    return Verdict{st.code() == StatusCode::kOutOfRange ? Refusal::kDimension : Refusal::kMalformed, st.message()};
  if (journals_[agent] == nullptr) journals_[agent] = std::make_unique<UploadJournal>();
  st = journals_[agent]->reset();
  if (!st.ok())
    return Verdict{Refusal::kMalformed, fmt::format("the coordinator cannot keep this update ({})", st.message())};
  up = Upload{};
  up.active = true;
  ++active_uploads_;
  up.header = h;
  for (auto& p : up.header.payload) p = View<uint8_t>{};
  return Verdict{};
}

Verdict ServerSession::on_chunk(uint32_t agent, const Chunk& c, uint64_t now_ms) {
  now_ = now_ms;
  auto refuse = [](Refusal r, std::string why) { return Verdict{r, std::move(why)}; };
  if (agent >= agents_) return refuse(Refusal::kMalformed, "unknown agent");
  Upload& up = uploads_[agent];
  if (!up.active || up.header.id != c.id) {
    const bool this_round = state_ == State::kOpen && c.id == id_;
    if (this_round && reported_[agent])
      return refuse(Refusal::kDuplicate, fmt::format("round {} already has this device's update", c.id.round));
    if (this_round)
      return refuse(Refusal::kChunk, fmt::format("no chunked update of round {} in flight (its header comes first)", c.id.round));
    return refuse(Refusal::kStaleRound, fmt::format("chunk of round {}: no update of that round is in flight", c.id.round));
  }
  const uint32_t k = c.segment;
  const uint64_t n = c.data.size;
  if (k >= up.header.segments)
    return refuse(Refusal::kChunk, fmt::format("chunk of segment {}; the update has {}", k, up.header.segments));
  const uint64_t total = up.header.payload_bytes[k];
  if (c.total != total)
    return refuse(Refusal::kChunk, fmt::format("chunk total {} disagrees with the announced size {} of segment {}",
                                               c.total, total, k));
  if (k < up.segment || c.offset < up.received[k])
    return refuse(Refusal::kChunk, fmt::format("duplicate chunk: bytes [{}, {}) of segment {} were already taken",
                                               c.offset, c.offset + n, k));
  if (k > up.segment || c.offset > up.received[k])
    return refuse(Refusal::kChunk, fmt::format("chunk out of order: bytes from {} of segment {}, expected {} of segment {}",
                                               c.offset, k, up.received[up.segment], up.segment));
  if (c.offset + n > total)
    return refuse(Refusal::kChunk, fmt::format("chunk past the announced size: bytes [{}, {}) of a {}-byte segment {}",
                                               c.offset, c.offset + n, total, k));
  const bool initial = up.header.id.round == kInitRound;
  if (uplink_.streams_values(initial)) {
    Status st = uplink_.add_chunk(k, c.offset, c.data.data, n, /*negate=*/false, core_);
    if (!st.ok()) {
      abort_upload(agent);
      return refuse(st.code() == StatusCode::kOutOfRange ? Refusal::kDimension : Refusal::kMalformed,
                    fmt::format("segment {} rejected: {} (the update is dropped)", k, st.message()));
    }
  }
  Status st = journals_[agent]->append(c.data.data, n);
  if (!st.ok()) {
    if (uplink_.streams_values(initial)) (void)uplink_.add_chunk(k, c.offset, c.data.data, n, true, core_);
    abort_upload(agent);
    return refuse(Refusal::kMalformed,
                  fmt::format("the coordinator cannot keep this update ({}); it is dropped", st.message()));
  }
  up.received[k] += n;
  if (up.received[k] == total) ++up.segment;
  if (up.segment == up.header.segments) return complete_upload(agent);
  return Verdict{};
}

// Every byte is here: raw values were aggregated already and count now;
// other encodings are decoded from the journal as an inline update would be.
Verdict ServerSession::complete_upload(uint32_t agent) {
  Upload& up = uploads_[agent];
  auto settle = [&] {
    if (up.active) --active_uploads_;
    up.active = false;
  };
  Update u = up.header;
  uint64_t bits = 0;
  for (uint32_t k = 0; k < u.segments; ++k) bits += 8 * u.payload_bytes[k];
  if (uplink_.streams_values(u.id.round == kInitRound)) {
    if (checks_clip()) {  // streamed into the sums already: taken back exactly when too long
      const double norm = journal_norm(agent, u);
      if (norm != -1 && over_clip(norm)) {  // -1: not raw dx, the uplink refuses it
        abort_upload(agent);
        return drop_unclipped(agent, norm);
      }
    }
    if (uplink_.over_norm(journal_update_norm(agent, u))) {  // taken back exactly, as above
      abort_upload(agent);
      return drop_update(agent, Refusal::kOverNorm, uplink_.over_norm_reason());
    }
    uplink_.count_stream(core_);
  } else {
    std::vector<uint8_t> bytes(journals_[agent]->size());
    Status st = journals_[agent]->read(0, bytes.data(), bytes.size());
    settle();
    if (!st.ok()) return Verdict{Refusal::kMalformed, st.message()};
    for (uint32_t k = 0; k < u.segments; ++k)
      u.payload[k] = View<uint8_t>{bytes.data() + SegmentStart(u, k), static_cast<uint32_t>(u.payload_bytes[k])};
    if (checks_clip()) {
      const double norm = payload_norm(u);
      if (norm != -1 && over_clip(norm)) {  // -1: not raw dx, the uplink refuses it
        (void)journals_[agent]->reset();
        return drop_unclipped(agent, norm);
      }
    }
    auto b = uplink_.accept(agent, u, announced_model().data, core_);
    if (!b.ok() && b.status().code() == StatusCode::kResourceExhausted)
      return drop_update(agent, Refusal::kOverNorm, b.status().message());
    if (!b.ok())
      return Verdict{b.status().code() == StatusCode::kOutOfRange ? Refusal::kDimension : Refusal::kMalformed,
                     b.status().message()};
    bits = *b;
  }
  settle();
  (void)journals_[agent]->reset();
  record(agent, u, bits);
  Verdict v;
  v.whole = true;
  return v;
}

// The update will not be whole: raw values already aggregated are taken back
// (subtracted exactly, so the sums hold what they would without them).
void ServerSession::abort_upload(uint32_t agent) {
  Upload& up = uploads_[agent];
  if (!up.active) return;
  up.active = false;
  --active_uploads_;
  UploadJournal& j = *journals_[agent];
  if (uplink_.streams_values(up.header.id.round == kInitRound)) {
    std::vector<uint8_t> buf(task::kChunkBytes);
    for (uint32_t k = 0; k < up.header.segments; ++k) {
      const uint64_t start = SegmentStart(up.header, k);
      for (uint64_t off = 0; off < up.received[k];) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), up.received[k] - off));
        Status st = j.read(start + off, buf.data(), n);
        if (st.ok()) st = uplink_.add_chunk(k, off, buf.data(), n, true, core_);
        if (!st.ok() && taint_.empty())  // the sums cannot be trusted: the round will aggregate nothing
          taint_ = fmt::format("agent {}'s cut-off update could not be taken back: {}", agent, st.message());
        off += n;
      }
    }
  }
  (void)j.reset();
}

}  // namespace fedrt::protocol
