// The firmware client's chunked transfers (docs/architecture.md, "Chunked
// transfer"), as runtime/src/net/device_chunks.cc does on Linux: a broadcast
// longer than the image's chunk arrives as a header and chunks, each decoded
// from the frame buffer straight into the session's broadcast vector (the
// device never holds more of it than one frame); an update whose segments do
// not fit the image's frame leaves as a header and chunks cut from the
// session's payload buffers, one frame at a time, from where the coordinator
// says it holds the bytes when it re-announces a round after a cut.
#include "client_impl.h"

namespace fedrt::fw {

namespace {

// Appends "alg=A run=R round=T" to a log line.
LogLine& AddRound(LogLine& l, const protocol::RoundId& id) {
  return l.add("alg=").add_u(id.algorithm).add(" run=").add_u(id.run).add(" round=").add_i(static_cast<int32_t>(id.round));
}

}  // namespace

Status FwClient::Impl::begin_broadcast(const protocol::Announcement& a) {
  down.active = false;
  FEDRT_TRY(ensure_session(a.id));
  if (a.model_bytes != session->broadcast_bytes())
    return Status::InvalidArgument(
        format(LogLine().add("a chunked broadcast of ").add_u(a.model_bytes).add(" bytes, not the task's")));
  down.header = a;  // the small fields; the model view is empty
  down.received = 0;
  down.chunks = 0;
  down.active = true;
  return Status::Ok();
}

// A chunk of the broadcast: in order, of the announced total, or the transfer
// is dropped (the coordinator announces the round again after a reconnect).
Status FwClient::Impl::on_chunk(const protocol::Chunk& c) {
  if (!down.active || c.id != down.header.id || c.segment != 0 || session == nullptr)
    return Status::InvalidArgument("a broadcast chunk without its announcement");
  const uint64_t total = down.header.model_bytes;
  if (c.total != total || c.offset != down.received || c.data.size > total - c.offset) {
    down.active = false;
    return Status::InvalidArgument(format(LogLine()
                                              .add("broadcast chunk at ")
                                              .add_u(c.offset)
                                              .add(", expected ")
                                              .add_u(down.received)
                                              .add(", or past the total, or of another: transfer dropped")));
  }
  const Status st = session->receive_broadcast(c.offset, c.data.data, c.data.size);
  if (!st.ok()) {
    down.active = false;
    return st;
  }
  down.received += c.data.size;
  ++down.chunks;
  ++stats.chunks_in;
  if (down.received < total) return Status::Ok();
  down.active = false;
  LogLine l;
  AddRound(l.add("broadcast "), down.header.id).add(" bytes=").add_u(total).add(" chunks=").add_u(down.chunks);
  log(l);
  down.header.model_in_place = true;
  return on_announcement(down.header);
}

// An update whose segments fit this image's Update bounds goes inline;
// otherwise its header (payload_bytes) now and its chunks from poll(), one
// frame each (next_chunk), starting where the coordinator's resume offsets say.
Status FwClient::Impl::send_update(const protocol::Update& u) {
  bool fits = u.segments <= MaxUpdateSegments();
  for (uint32_t k = 0; k < u.segments; ++k) fits = fits && u.payload[k].size <= MaxSegmentBytes();
  up.active = false;
  if (fits) {
    FEDRT_TRY(Encode(u, env));
    resume = false;
    return send();
  }
  protocol::Update h = u;
  h.chunked = true;
  for (uint32_t k = 0; k < u.segments; ++k) h.payload_bytes[k] = u.payload[k].size;
  FEDRT_TRY(Encode(h, env));
  up = Outgoing{};
  up.id = u.id;
  up.segments = u.segments;
  for (uint32_t k = 0; k < u.segments; ++k) {
    up.payload[k] = u.payload[k];
    up.from[k] = resume ? (resume_bytes[k] < u.payload[k].size ? resume_bytes[k] : u.payload[k].size) : 0;
    up.skipped += up.from[k];
  }
  up.resumed = resume;
  resume = false;
  up.offset = up.from[0];
  up.active = true;
  return send();
}

// Queues the next chunk of the update being sent; false when there is none
// (then logs the transfer).
bool FwClient::Impl::next_chunk() {
  if (!up.active) return false;
  while (up.segment < up.segments && up.offset >= up.payload[up.segment].size) {
    if (++up.segment < up.segments) up.offset = up.from[up.segment];
  }
  if (up.segment >= up.segments) {
    up.active = false;
    LogLine l;
    AddRound(l.add("update chunks "), up.id).add(" chunks=").add_u(up.chunks);
    if (up.resumed) l.add(" resumed from_bytes=").add_u(up.skipped);
    log(l);
    return false;
  }
  const protocol::View<uint8_t>& p = up.payload[up.segment];
  const uint64_t left = p.size - up.offset;
  const uint32_t n = left < kChunk ? static_cast<uint32_t>(left) : kChunk;
  const protocol::Chunk c{up.id, up.segment, up.offset, p.size, protocol::View<uint8_t>{p.data + up.offset, n}};
  if (!Encode(c, env).ok() || !send().ok()) {
    up.active = false;
    log(LogLine().add("update chunk not encoded: transfer dropped"));
    return false;
  }
  up.offset += n;
  ++up.chunks;
  ++stats.chunks_out;
  return true;
}

}  // namespace fedrt::fw
