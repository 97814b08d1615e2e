// DeviceSession's chunked transfers (docs/architecture.md, "Chunked
// transfer"): a broadcast longer than one chunk arrives as a header and
// chunks written straight into the client session; an update segment longer
// than one chunk leaves as a header and chunks, from where the coordinator
// says it holds the bytes when it re-announces a round after a cut.
#include <algorithm>

#include <fmt/format.h>

#include "fedrt/net/device_session.h"

namespace fedrt::net {

Status DeviceSession::begin_broadcast(const wire::Envelope& env) {
  const protocol::Announcement& a = inbound_.announcement();
  FEDRT_TRY(ensure_session(a.id));
  receiving_ = false;
  if (a.model_bytes != session_->broadcast_bytes())
    return Status(StatusCode::kInvalidArgument, fmt::format("from coordinator: a chunked broadcast of {} bytes, this task's "
                                                            "is {}", a.model_bytes, session_->broadcast_bytes()));
  chunked_announce_ = env;
  received_ = 0;
  receiving_ = true;
  return Status::Ok();
}

Status DeviceSession::on_chunk(const protocol::Chunk& c) {
  const wire::RoundAnnouncement& h = chunked_announce_.announce();
  const protocol::RoundId id{h.algorithm_index(), h.run(), h.round()};
  if (!receiving_ || c.id != id || c.segment != 0 || session_ == nullptr)
    return Status(StatusCode::kInvalidArgument, fmt::format("from coordinator: a chunk of round {} without its announcement",
                                                            c.id.round));
  if (c.total != h.model_bytes() || c.offset != received_ || c.offset + c.data.size > c.total) {
    receiving_ = false;
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("from coordinator: broadcast chunk [{}, {}) of {} bytes, expected offset {} of {}", c.offset,
                              c.offset + c.data.size, c.total, received_, h.model_bytes()));
  }
  Status st = session_->receive_broadcast(c.offset, c.data.data, c.data.size);
  if (!st.ok()) {
    receiving_ = false;
    return Status(st.code(), std::string("from coordinator: ") + st.message());
  }
  received_ += c.data.size;
  if (received_ < c.total) return Status::Ok();
  receiving_ = false;
  wire::WireError err;
  if (!inbound_.decode(chunked_announce_, err)) return Status(StatusCode::kInvalidArgument, "from coordinator: " + err.message);
  protocol::Announcement a = inbound_.announcement();
  a.model_in_place = true;
  return on_announcement(a);
}

// An update whose segments fit one chunk goes whole; otherwise a header and
// every segment in chunks of kChunkBytes (from the resume offsets when the
// coordinator holds part of it already).
Status DeviceSession::send_update(const protocol::Update& u) {
  bool chunked = false;
  for (uint32_t k = 0; k < u.segments; ++k) chunked = chunked || u.payload[k].size > task::kChunkBytes;
  wire::Envelope env;
  if (!chunked) {
    wire::Encode(u, env);
    return send_checked(env);
  }
  protocol::Update h = u;
  h.chunked = true;
  for (uint32_t k = 0; k < u.segments; ++k) h.payload_bytes[k] = u.payload[k].size;
  wire::Encode(h, env);
  FEDRT_TRY(send_checked(env));
  uint64_t skipped = 0;
  for (uint32_t k = 0; k < u.segments; ++k) {
    const uint64_t size = u.payload[k].size;
    const uint64_t from = resume_ ? std::min<uint64_t>(resume_bytes_[k], size) : 0;
    skipped += from;
    for (uint64_t off = from; off < size; off += task::kChunkBytes) {
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(task::kChunkBytes, size - off));
      protocol::Chunk c{u.id, k, off, size, protocol::View<uint8_t>{u.payload[k].data + off, n}};
      wire::Envelope ce;
      wire::Encode(c, ce);
      FEDRT_TRY(send_checked(ce));
    }
  }
  if (resume_) log_("resumed alg={} run={} round={} from_bytes={}", u.id.algorithm, u.id.run, u.id.round, skipped);
  resume_ = false;
  return Status::Ok();
}

}  // namespace fedrt::net
