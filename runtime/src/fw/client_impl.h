#pragma once
// The firmware client's state (fedrt/fw/client.h), shared by its translation
// units: client.cc (Welcome, the device agent's host, init), client_poll.cc
// (the poll() state machine), own_samples.cc (own-data samples). The round
// messages, chunked transfers included, are the device agent's
// (protocol/device_agent.h). Private to runtime/src/fw.
// Device code.

#include <cstring>
#include <new>

#include <pb_decode.h>
#include <pb_encode.h>

#include "fedrt.npb.h"
#include "fedrt/fw/client.h"
#include "fedrt/fw/nanopb_codec.h"
#include "fedrt/fw/log_line.h"
#include "fedrt/protocol/device_agent.h"
#include "local_data.h"
#include "tls_link.h"

#ifndef FEDRT_FW_FAMILIES
#define FEDRT_FW_FAMILIES fedrt::protocol::kAllFamilies
#endif

namespace fedrt::fw {

namespace client_detail {
constexpr uint32_t kProtocolVersion = 3;  // wire::kProtocolVersion
constexpr uint32_t kFamilies = FEDRT_FW_FAMILIES;
constexpr size_t kMaxFrame = fedrt_wire_Envelope_size;  // largest Envelope this image's .options allow
constexpr size_t kBodyOffset = 8;                        // frame header at 4, body 8-aligned
static_assert(kMaxFrame + kBodyOffset >= Inbound::kScratchBytes, "frame buffer too small for the SecAgg+ tables");
// The chunk this image names in Hello.max_chunk_bytes and cuts its updates
// into (docs/architecture.md, "Chunked transfer"): what a frame holds of
// Chunk.data. The coordinator sends a broadcast up to this long inline, so
// the image's RoundAnnouncement.model bound must hold that many values.
constexpr uint32_t kChunk = ChunkBytesFor(kMaxFrame);
static_assert(kChunk >= task::kMinChunkBytes, "frame buffer too small for a chunk of kMinChunkBytes");
static_assert(sizeof(fedrt_wire_RoundAnnouncement::model) / sizeof(double) >= kChunk / 8,
              "RoundAnnouncement.model bound under the inline broadcast of one chunk");
}  // namespace client_detail

struct FwClient::Impl {
  using Agent = protocol::DeviceAgent<float, client_detail::kFamilies, Impl>;
  using Session = Agent::Session;
  static constexpr size_t kMaxFrame = client_detail::kMaxFrame;
  static constexpr size_t kBodyOffset = client_detail::kBodyOffset;
  static constexpr uint32_t kFamilies = client_detail::kFamilies;
  static constexpr uint32_t kChunk = client_detail::kChunk;

  enum class State { kStart, kHandshake, kRead, kWrite, kSamples, kRetry, kDrain, kDone, kError };

  ClientOptions opt;
  ClientStats stats;
  TlsLink tls;
  // A frame (header at 4, body at 8); once decoded, the SecAgg+ tables of the message.
  alignas(8) uint8_t frame[kBodyOffset + kMaxFrame];
  fedrt_wire_Envelope env;  // the decoded message, then the answer
  Inbound inbound;
  alignas(Arena) uint8_t arena_mem[sizeof(Arena)];
  Arena* arena = nullptr;
  size_t store_mark = 0;  // workspace bytes of the sample store
  size_t data_mark = 0;   // ... and of the local oracle
  bool has_task = false;
  task::Task task{};
  uint64_t task_print = 0;
  uint32_t index = 0;
  LocalData<kFamilies> data;
  problems::LocalProblem<float> local{};
  Agent agent{*this};
  bool welcomed = false;  // in this TLS session
  bool refused = false;
  bool shutdown = false;
  bool out_pending = false;   // a frame is queued in `frame`
  bool need_samples = false;  // the Welcome in `env` waits for feed_done()
  Status fatal;
  // The poll() state machine.
  State state = State::kStart;
  uint32_t failed = 0;           // consecutive sessions without a Welcome
  uint32_t sessions_before = 0;  // stats.sessions when the current session started
  uint32_t backoff_ms = 0;       // reconnect backoff
  uint32_t wait_from = 0;        // kRetry: start of the backoff; kDrain: start of draining
  // Own samples fed or pulled into the store (rows x dim, row-major), float32.
  float* store_x = nullptr;
  float* store_y = nullptr;
  uint32_t store_rows = 0;  // stored
  uint32_t store_dim = 0;   // features per stored example (the first feed's)
  bool store_sealed = false;
  char why[128] = {};  // a formatted refusal or feed error (Status keeps the pointer)

  const char* format(const LogLine& l) {
    const size_t n = std::strlen(l.c_str());
    const size_t k = n < sizeof why - 1 ? n : sizeof why - 1;
    std::memcpy(why, l.c_str(), k);
    why[k] = '\0';
    return why;
  }

  void log(const LogLine& l) { tls.log(l.c_str()); }
  static int Entropy(void* ctx, uint64_t, uint32_t, uint8_t* out, size_t n) {
    return static_cast<Impl*>(ctx)->tls.random(out, n);
  }
  // Encodes env into the frame buffer and queues it; poll() writes it.
  Status send() {
    pb_ostream_t s = pb_ostream_from_buffer(frame + kBodyOffset, kMaxFrame);
    if (!pb_encode(&s, fedrt_wire_Envelope_fields, &env)) return Status::Internal("encoding a message failed");
    tls.begin_frame(frame + kBodyOffset, s.bytes_written);
    out_pending = true;
    return Status::Ok();
  }
  Status send_hello();
  Status reply(const char* refusal);
  Status on_welcome(const fedrt_wire_Welcome& w);
  Status accept(const fedrt_wire_Welcome& w);
  const char* own_samples(const task::Task& t, const float** x, const float** y, uint32_t* rows);
  // Queues the next chunk of an update being uploaded; false when none is.
  bool next_chunk();
  Status handle();
  void on_frame(size_t len);
  Poll step(bool& again);

  // The device agent's host (protocol/device_agent.h): the session's memory
  // is the workspace above the local oracle; the board keeps no state file.
  Arena* session_arena(size_t) {
    arena->release_to(data_mark);
    return arena;
  }
  void session_opened(Session&, const protocol::RoundId&) {
    if (arena->high_water() > stats.workspace_max_bytes) stats.workspace_max_bytes = arena->high_water();
  }
  bool has_saved(const protocol::RoundId&) const { return false; }
  static protocol::AgentLimits limits() { return protocol::AgentLimits{MaxUpdateSegments(), MaxSegmentBytes(), kChunk}; }
  static const char* WireRefusal(const task::Task& t);
  uint32_t now_ms() { return tls.now(); }
  Status persist(bool) { return Status::Ok(); }
  Status send(const protocol::ClientMessage& m) {
    FEDRT_TRY(Encode(m, env));
    if (m.kind == protocol::MessageKind::kChunk) ++stats.chunks_out;
    return send();
  }
  void worked(const protocol::RoundId& id, const protocol::ClientMessage& out, bool again, uint32_t ms);
  void masked(const protocol::RoundId& id);
  void settled(const protocol::Settled& s);
  void broadcast_received(const protocol::RoundId& id, uint64_t bytes, uint32_t chunks);
  void upload_done(const protocol::RoundId& id, uint32_t chunks, bool resumed, uint64_t skipped);
};

}  // namespace fedrt::fw
