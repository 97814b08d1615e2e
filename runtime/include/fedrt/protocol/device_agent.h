#pragma once
// DeviceAgent: everything a device does with the coordinator's round
// messages, once, for both device drivers (the Linux device and the
// firmware; docs/architecture.md, "Device agent"). Sans I/O: it takes a
// decoded ServerMessage and hands ClientMessages to its host to encode and
// send. It owns
//   - the task check: whether this build, memory and frames can run it;
//   - the client session of the announced (algorithm, run): created in the
//     host's arena, restored by the host when it saved one;
//   - a broadcast that arrives in chunks, written in order straight into the
//     session (the device never holds more of it than one message);
//   - the update's upload: inline when it fits the host's messages, else a
//     header and chunks (ChunkCursor) from the resume offsets of the
//     announcement;
//   - the pending/settled bookkeeping: the local work's wall time and report,
//     and the report of the round that settles it.
// The host keeps its transport, persistence and logging. It is a class with
//   AgentLimits limits();                    the bounds of its messages
//   static const char* WireRefusal(const task::Task&);  why its frames cannot carry a task (nullptr: they can)
//   static int Entropy(void* host, ...);     fresh SecAgg+ secrets (an EntropyFn; its context is the host)
//   Arena* session_arena(size_t bytes);      memory for a new session (nullptr: none)
//   void session_opened(Session&, RoundId);  after init (a host restores its saved state here)
//   bool has_saved(RoundId);                 a saved session of that algorithm and run (a result replayed after a restart)
//   uint32_t now_ms();                       a millisecond clock (the work's duration)
//   Status persist(bool durable);            the session's state, before an update leaves (durable) or after a commit
//   Status send(const ClientMessage&);       encodes and queues a message
//   void worked(RoundId, const ClientMessage&, bool again, uint32_t ms);  an update or SecAgg+ advertisement is out
//   void masked(RoundId);                    a secure round's masked input is out
//   void settled(const Settled&);            the round of this device's update closed
//   void broadcast_received(RoundId, uint64_t bytes, uint32_t chunks);
//   void upload_done(RoundId, uint32_t chunks, bool resumed, uint64_t skipped);
// Device code: no heap, no exceptions; the session lives in the agent.

#include <cstdint>
#include <new>

#include "fedrt/core/arena.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/chunk_cursor.h"
#include "fedrt/protocol/client_session.h"
#include "fedrt/protocol/messages.h"

namespace fedrt::protocol {

// The bounds of the host's messages.
struct AgentLimits {
  uint32_t inline_segments = task::kMaxSegments;      // an inline Update holds this many segments ...
  uint32_t inline_segment_bytes = task::kChunkBytes;  // ... of at most this many bytes each
  uint32_t chunk_bytes = task::kChunkBytes;           // the chunks of a longer update
};

// A round of this device's update closed (included or dropped). `known`: the
// local work ran in this process (after a restart only the result is known).
struct Settled {
  RoundId id;
  bool included = false;
  bool known = false;
  WorkReport report;  // with duration_ms; NaN losses and 0 examples when not known
};

template <class S, uint32_t kFamilies, class Host>
class DeviceAgent {
 public:
  using Session = ClientSession<S, kFamilies>;

  explicit DeviceAgent(Host& host) : host_(host) {}
  ~DeviceAgent() { reset(); }
  DeviceAgent(const DeviceAgent&) = delete;
  DeviceAgent& operator=(const DeviceAgent&) = delete;

  // The task this device accepted, as `agent` with `problem` (neither is
  // copied: the host keeps them; nullptr: none). Drops the session of a previous task.
  void assign(const task::Task* task, uint32_t agent, const problems::LocalProblem<S>* problem) {
    reset();
    task_ = task;
    agent_ = agent;
    problem_ = problem;
  }
  // Why this device cannot run the assigned task in `capacity` bytes of
  // workspace (nullptr: it can): a family not in this build, no data for
  // the problem, vectors beyond its memory, messages beyond its frames.
  const char* refusal(size_t capacity) const {
    if (task_ == nullptr || problem_ == nullptr) return "no task";
    if (const char* why = Session::Refusal(*task_, *problem_, capacity)) return why;
    return Host::WireRefusal(*task_);
  }
  // Drops the session and any transfer (a new task, or a new connection: a
  // transfer cut off with it is announced again).
  void reset() {
    if (session_ != nullptr) session_->~Session();
    session_ = nullptr;
    cut_transfers();
  }
  void cut_transfers() {
    down_active_ = false;
    up_.stop();
  }

  // One message from the coordinator (the device side's only dispatch is the
  // session's on_message; this adds the session, chunks and bookkeeping).
  Status on_message(const ServerMessage& m) {
    if (task_ == nullptr) return Status::FailedPrecondition("a round message before Welcome");
    if (m.kind == MessageKind::kChunk) return on_chunk(m.chunk);
    if (m.kind == MessageKind::kAnnouncement) {
      FEDRT_TRY(ensure_session(m.announcement.id));
      if (m.announcement.model_bytes > 0) return begin_broadcast(m.announcement);
      return run(m);
    }
    const RoundId id = m.id();
    if (m.kind == MessageKind::kRoundResult && !holds(id) && host_.has_saved(id))
      FEDRT_TRY(ensure_session(id));  // a result replayed after a restart
    if (session_ == nullptr) return Status::Ok();
    return run(m);
  }

  // The next chunk of an update being uploaded, sent; false: none is left.
  bool uploading() const { return up_.active(); }
  Status send_next_chunk() {
    if (!up_.active()) return Status::Ok();
    ClientMessage out;
    out.kind = MessageKind::kChunk;
    if (!up_.next(out.chunk)) {
      host_.upload_done(up_.id(), up_.chunks(), resumed_, up_.skipped());
      return Status::Ok();
    }
    const Status st = host_.send(out);
    if (!st.ok()) up_.stop();
    return st;
  }

  Session* session() { return session_; }
  const Session* session() const { return session_; }
  // The update not yet settled, of the live session.
  bool pending(RoundId* id) const { return session_ != nullptr && session_->pending(id); }

 private:
  bool holds(const RoundId& id) const {
    return session_ != nullptr && session_->algorithm() == id.algorithm && session_->run() == id.run;
  }

  // The session of (algorithm, run): kept, or created in the host's arena.
  Status ensure_session(const RoundId& id) {
    if (holds(id)) return Status::Ok();
    if (id.algorithm >= task_->num_algorithms) return Status::InvalidArgument("a round of an algorithm the task does not name");
    reset();
    Arena* arena = host_.session_arena(Session::WorkspaceBytes(*task_, id.algorithm));
    if (arena == nullptr) return Status::ResourceExhausted("no memory for the round's session");
    Session* s = new (session_mem_) Session();
    typename Session::Options o;
    o.task = task_;
    o.algorithm = id.algorithm;
    o.run = id.run;
    o.agent = agent_;
    o.problem = *problem_;
    o.entropy = &Host::Entropy;
    o.entropy_ctx = &host_;
    const Status st = s->init(*arena, o);
    if (!st.ok()) {
      s->~Session();
      return st;
    }
    session_ = s;
    timed_ = false;
    host_.session_opened(*s, id);
    return Status::Ok();
  }

  // A message for the session, with the bookkeeping around it.
  Status run(const ServerMessage& m) {
    RoundId pending;
    const bool had = session_->pending(&pending) && pending == m.id();
    const uint32_t t0 = host_.now_ms();
    const WorkReport report = session_->report();  // of the pending update, before a result settles it
    ClientMessage out;
    FEDRT_TRY(session_->on_message(m, out));
    switch (m.kind) {
      case MessageKind::kAnnouncement:
        if (!had) {
          work_ms_ = host_.now_ms() - t0;
          timed_ = true;
        }
        out.update.report.duration_ms = work_ms_;
        resume_ = m.announcement.resume;
        for (uint32_t k = 0; k < task::kMaxSegments; ++k) resume_bytes_[k] = m.announcement.resume_bytes[k];
        FEDRT_TRY(host_.persist(/*durable=*/true));  // before the update leaves
        if (out.kind == MessageKind::kUpdate || out.kind == MessageKind::kSecAggAdvertise)
          host_.worked(m.announcement.id, out, had, work_ms_);
        break;
      case MessageKind::kRoundResult:
        if (had) {
          FEDRT_TRY(host_.persist(/*durable=*/false));  // a lost commit is replayed
          settle(m.result, report);
        }
        return Status::Ok();
      case MessageKind::kSecAggSharesIn:
        out.masked.report.duration_ms = work_ms_;
        if (out.kind == MessageKind::kSecAggMasked) host_.masked(m.shares.id);
        break;
      default: break;
    }
    if (out.kind == MessageKind::kUpdate) return send_update(out);
    if (out.kind == MessageKind::kNone) return Status::Ok();
    return host_.send(out);
  }

  void settle(const RoundResult& r, const WorkReport& report) {
    Settled s;
    s.id = r.id;
    s.included = r.included;
    s.known = timed_;  // else a result replayed after a restart: the work is not known
    timed_ = false;
    if (s.known) {
      s.report = report;
      s.report.duration_ms = work_ms_;
    }
    host_.settled(s);
  }

  // An update that fits the host's messages goes inline; otherwise its header
  // (payload_bytes) now and its chunks from send_next_chunk().
  Status send_update(ClientMessage& out) {
    Update& u = out.update;
    const AgentLimits limits = host_.limits();
    bool fits = u.segments <= limits.inline_segments;
    for (uint32_t k = 0; k < u.segments; ++k) fits = fits && u.payload[k].size <= limits.inline_segment_bytes;
    up_.stop();
    const bool resume = resume_;
    resume_ = false;
    if (fits) return host_.send(out);
    up_.start(u.id, u.segments, u.payload, resume ? resume_bytes_ : nullptr, limits.chunk_bytes);
    resumed_ = resume;
    u.chunked = true;
    for (uint32_t k = 0; k < u.segments; ++k) {
      u.payload_bytes[k] = u.payload[k].size;
      u.payload[k] = View<uint8_t>{};
    }
    const Status st = host_.send(out);
    if (!st.ok()) up_.stop();
    return st;
  }

  // A broadcast longer than a message: its header now, its bytes in chunks.
  Status begin_broadcast(const Announcement& a) {
    down_active_ = false;
    if (a.has_delta || a.model.size != 0) return Status::InvalidArgument("a chunked broadcast that also carries a model");
    if (a.model_bytes != session_->broadcast_bytes())
      return Status::InvalidArgument("a chunked broadcast of another length than the task's");
    down_ = a;  // the small fields; no views into the message
    received_ = 0;
    down_chunks_ = 0;
    down_active_ = true;
    return Status::Ok();
  }

  // A chunk of the broadcast: in order, of the announced total, or the
  // transfer is dropped (the coordinator announces the round again).
  Status on_chunk(const Chunk& c) {
    if (!down_active_ || c.id != down_.id || c.segment != 0 || session_ == nullptr)
      return Status::InvalidArgument("a broadcast chunk without its announcement");
    const uint64_t total = down_.model_bytes;
    if (c.total != total || c.offset != received_ || c.data.size > total - c.offset) {
      down_active_ = false;
      return Status::InvalidArgument("a broadcast chunk out of order, past the total, or of another: transfer dropped");
    }
    const Status st = session_->receive_broadcast(c.offset, c.data.data, c.data.size);
    if (!st.ok()) {
      down_active_ = false;
      return st;
    }
    received_ += c.data.size;
    ++down_chunks_;
    if (received_ < total) return Status::Ok();
    down_active_ = false;
    host_.broadcast_received(down_.id, total, down_chunks_);
    ServerMessage m;
    m.kind = MessageKind::kAnnouncement;
    m.announcement = down_;
    m.announcement.model_in_place = true;
    return run(m);
  }

  Host& host_;
  const task::Task* task_ = nullptr;
  const problems::LocalProblem<S>* problem_ = nullptr;
  Session* session_ = nullptr;
  uint32_t agent_ = 0;
  uint32_t work_ms_ = 0;  // the last local work's wall time (the update's report and the settled round's)
  alignas(Session) uint8_t session_mem_[sizeof(Session)];
  // A broadcast being received in chunks: its header and the bytes written so far.
  Announcement down_{};
  uint64_t received_ = 0;
  uint32_t down_chunks_ = 0;
  // The update being uploaded in chunks, and the announcement's resume offsets.
  ChunkCursor up_;
  uint64_t resume_bytes_[task::kMaxSegments] = {};
  bool down_active_ = false;
  bool resume_ = false;
  bool resumed_ = false;
  bool timed_ = false;  // the pending update's work ran in this session
};

}  // namespace fedrt::protocol
