// The firmware's device driver (fedrt/fw/client.h): moves frames between the
// TLS link and the protocol session, as runtime/src/net/device.cc does on
// POSIX (docs/architecture.md, "Round protocol"); it holds no round logic.
#include "fedrt/fw/client.h"

#include <cstring>
#include <new>

#include <pb_decode.h>
#include <pb_encode.h>

#include "fedrt.npb.h"
#include "fedrt/config/fingerprint.h"
#include "fedrt/config/names.h"
#include "fedrt/fw/codec.h"
#include "fedrt/fw/log_line.h"
#include "fedrt/protocol/client_session.h"
#include "local_data.h"
#include "tls_link.h"

#ifndef FEDRT_FW_FAMILIES
#define FEDRT_FW_FAMILIES fedrt::protocol::kAllFamilies
#endif

namespace fedrt::fw {

namespace {

constexpr uint32_t kProtocolVersion = 2;  // wire::kProtocolVersion
constexpr uint32_t kFamilies = FEDRT_FW_FAMILIES;
using Session = protocol::ClientSession<float, kFamilies>;
constexpr size_t kMaxFrame = fedrt_wire_Envelope_size;  // largest Envelope this image's .options allow
constexpr size_t kBodyOffset = 8;                        // frame header at 4, body 8-aligned
static_assert(kMaxFrame + kBodyOffset >= Inbound::kScratchBytes, "frame buffer too small for the SecAgg+ tables");

// Why this image's frames cannot carry `task` (nullptr: they can).
const char* WireRefusal(const config::Task& t) {
  for (uint32_t a = 0; a < t.num_algorithms; ++a) {
    const auto s = Session::Work::ShapeOf(t, t.algorithms[a]);
    const size_t seg = static_cast<size_t>(s.segment_dim);
    const size_t coded = compression::MaxPayloadBytes(t.compression.quantizer, s.segment_dim);
    if (static_cast<uint32_t>(s.broadcast_dim) > MaxBroadcastScalars())
      return "the task's broadcast exceeds this firmware image's frames";
    if (s.chains > MaxUpdateSegments()) return "the task's update has more segments than this firmware image sends";
    if ((coded > 8 * seg ? coded : 8 * seg) > MaxSegmentBytes())
      return "the task's update segments exceed this firmware image's frames";
    if (t.secagg.enabled && s.chains * seg > MaxMaskedScalars())
      return "the task's SecAgg+ input exceeds this firmware image's frames";
  }
  return nullptr;
}

}  // namespace

struct FwClient::Impl {
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
  config::Task task{};
  uint64_t task_print = 0;
  uint32_t index = 0;
  LocalData<kFamilies> data;
  protocol::LocalProblem<float> local{};
  alignas(Session) uint8_t session_mem[sizeof(Session)];
  Session* session = nullptr;
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
  void drop_session() {
    if (session != nullptr) session->~Session();
    session = nullptr;
  }
  Status send_hello();
  Status reply(const char* refusal);
  Status on_welcome(const fedrt_wire_Welcome& w);
  Status accept(const fedrt_wire_Welcome& w);
  const char* own_samples(const config::Task& t, const float** x, const float** y, uint32_t* rows);
  Status ensure_session(const protocol::RoundId& id);
  Status send_output(const protocol::ClientOutput& out);
  Status on_round_message();
  Status handle();
  void on_frame(size_t len);
  Poll step(bool& again);
};

Status FwClient::Impl::send_hello() {
  std::memset(static_cast<void*>(&env), 0, sizeof env);
  env.which_body = fedrt_wire_Envelope_hello_tag;
  fedrt_wire_Hello& h = env.body.hello;
  h.protocol_version = kProtocolVersion;
  std::strncpy(h.device_id, opt.identity.device_id, sizeof h.device_id - 1);
  h.provisioned_problem = opt.problem.table != nullptr ? opt.problem.problem_fingerprint : 0;
  protocol::RoundId pending;
  if (session != nullptr && session->pending(&pending)) {
    h.has_pending = true;
    h.pending_algorithm = pending.algorithm;
    h.pending_run = pending.run;
    h.pending_round = pending.round;
  }
  return send();
}

// TaskReply: accepted (refusal == nullptr) or refused with the reason; a
// refusal ends the run once the reply is out.
Status FwClient::Impl::reply(const char* refusal) {
  std::memset(static_cast<void*>(&env), 0, sizeof env);
  env.which_body = fedrt_wire_Envelope_task_reply_tag;
  env.body.task_reply.accepted = refusal == nullptr;
  if (refusal != nullptr) {
    std::strncpy(env.body.task_reply.reason, refusal, sizeof env.body.task_reply.reason - 1);
    log(LogLine().add("refused task reason=").add(refusal));
    refused = true;
    fatal = Status::FailedPrecondition("cannot take the coordinator's task");
  }
  return send();
}

// Welcome: the agent index and the task. Builds the local oracle over the
// provisioned data once per task and says whether this device can run it.
Status FwClient::Impl::on_welcome(const fedrt_wire_Welcome& w) {
  config::Task t;
  Status st = DecodeTask(w.task, t);
  if (!st.ok()) return reply(st.message());
  if (t.problem.own_data) {
    const float *x = nullptr, *y = nullptr;
    uint32_t rows = 0;
    const char* why = own_samples(t, &x, &y, &rows);
    if (need_samples) return Status::Ok();  // poll() asks for samples, then comes back here
    if (why != nullptr) return reply(why);
    const uint64_t print = config::TaskFingerprint(t);
    if (!has_task || print != task_print || w.device_index != index) {
      drop_session();
      has_task = false;
      task = t;
      task_print = print;
      index = w.device_index;
      arena->release_to(store_mark);
      st = data.build_own(x, y, rows, task, *arena, local);
      if (!st.ok()) return reply(st.message());
      data_mark = arena->used();
      has_task = true;
    }
    return accept(w);
  }
  if (opt.problem.table == nullptr) return reply("this device holds no provisioned problem image: it takes tasks on its own data only");
  if (w.device_index != opt.problem.agent_index) {
    LogLine l;
    l.add("provisioned for agent ").add_u(opt.problem.agent_index).add(", assigned ").add_u(w.device_index);
    log(l);
    return reply("the device's data was provisioned for another agent index");
  }
  if (config::ProblemFingerprint(t.problem) != opt.problem.problem_fingerprint)
    return reply("the provisioned data is of another problem than the task's");
  const uint64_t print = config::TaskFingerprint(t);
  if (!has_task || print != task_print || w.device_index != index) {
    drop_session();
    has_task = false;
    task = t;
    task_print = print;
    index = w.device_index;
    arena->release_to(store_mark);
    st = data.build(opt.problem, task, *arena, local);
    if (!st.ok()) return reply(st.message());
    data_mark = arena->used();
    has_task = true;
  }
  return accept(w);
}

// The task's oracle is built: accept it in TaskReply if this build, memory and frames can run it.
Status FwClient::Impl::accept(const fedrt_wire_Welcome& w) {
  const size_t left = arena->capacity() - data_mark;
  welcomed = true;
  const char* why = Session::Refusal(task, local, left);
  if (why == nullptr) why = WireRefusal(task);
  if (why != nullptr) return reply(why);
  LogLine l;
  l.add("registered index=").add_u(index).add(" devices=").add_u(w.num_devices).add(" problem=")
      .add(config::ProblemKindName(task.problem.kind)).add(" d=").add_u(task.problem.dim).add(" algorithms=");
  for (uint32_t a = 0; a < task.num_algorithms; ++a) l.add(a ? "," : "").add(config::AlgorithmName(task.algorithms[a]));
  log(l);
  return reply(nullptr);
}

namespace {
bool Finite(float v) { return v - v == 0.0f; }
}  // namespace

// Where an own-data task's examples are (x, y, rows; nullptr) or why this
// device cannot give them; need_samples when they are still to be fed. Binary
// labels 0/1 become -1/+1 in the store, as the shard readers store them.
const char* FwClient::Impl::own_samples(const config::Task& t, const float** x, const float** y, uint32_t* rows) {
  need_samples = false;
  const SampleOptions& so = opt.samples;
  const config::ProblemKind kind = t.problem.kind;
  if (kind != config::ProblemKind::kLeastSquares && kind != config::ProblemKind::kLogistic)
    return "own-data tasks of this model are not in this firmware (least squares and binary logistic regression only)";
  if (!protocol::Has(kFamilies, config::Family::kOpt)) return "this device build does not include the task's algorithm family";
  const bool binary = kind == config::ProblemKind::kLogistic;
  const uint32_t d = t.problem.dim;
  if (so.x != nullptr) {  // in place: validated, never written
    if (so.dim != d)
      return format(LogLine().add("the device's samples have ").add_u(so.dim).add(" features, the task's model d = ").add_u(d));
    for (uint32_t i = 0; i < so.rows; ++i)
      if (binary ? (so.y[i] != 1.0f && so.y[i] != -1.0f) : !Finite(so.y[i]))
        return format(LogLine().add("example ").add_u(i).add(binary ? ": label is not -1/+1 (binary logistic regression; a shard in place must store -1/+1)" : ": label is not a finite number"));
    *x = so.x;
    *y = so.y;
    *rows = so.rows;
    return so.rows == 0 ? "the device holds no examples" : nullptr;
  }
  if (!store_sealed && so.pull != nullptr) {
    if (d > so.store_dim)
      return format(LogLine().add("the task's model d = ").add_u(d).add(" exceeds this device's sample store (").add_u(so.store_dim).add(" features)"));
    store_dim = d;
    store_rows = 0;
    for (;;) {
      const bool full = store_rows == so.store_rows;
      float* xi = full ? nullptr : store_x + static_cast<size_t>(store_rows) * d;
      const int r = so.pull(so.pull_ctx, store_rows, xi, d, full ? nullptr : store_y + store_rows);
      if (r == 0) break;
      if (r < 0) return format(LogLine().add("example ").add_u(store_rows).add(": the sample callback failed"));
      if (full)
        return format(LogLine().add("the device holds more examples than its sample store (").add_u(so.store_rows).add(")"));
      for (uint32_t k = 0; k <= d; ++k)
        if (!Finite(k < d ? xi[k] : store_y[store_rows]))
          return format(LogLine().add("example ").add_u(store_rows).add(k < d ? ", feature " : ", label").add(k < d ? "" : "")
                            .add_u(k < d ? k : 0).add(": not a finite number (NaN and Inf are refused)"));
      ++store_rows;
    }
    store_sealed = true;
  }
  if (!store_sealed && so.store_rows == 0) return "this device holds no own samples: its data is a provisioned problem image";
  if (!store_sealed) {
    need_samples = true;
    return nullptr;
  }
  if (store_rows == 0) return "the device holds no examples";
  if (store_dim != d)
    return format(LogLine().add("the device's samples have ").add_u(store_dim).add(" features, the task's model d = ").add_u(d));
  if (binary)
    for (uint32_t i = 0; i < store_rows; ++i) {
      float& l = store_y[i];
      if (l == 0.0f) l = -1.0f;
      if (l != 1.0f && l != -1.0f)
        return format(LogLine().add("example ").add_u(i).add(": label is not a class of binary logistic regression (0/1 or -1/+1)"));
    }
  *x = store_x;
  *y = store_y;
  *rows = store_rows;
  return nullptr;
}

// The session of (algorithm, run); a new one starts from zero state (the
// board keeps no state file: a session lives as long as the firmware runs).
Status FwClient::Impl::ensure_session(const protocol::RoundId& id) {
  if (session != nullptr && session->algorithm() == id.algorithm && session->run() == id.run) return Status::Ok();
  if (!has_task) return Status::FailedPrecondition("a round message before Welcome");
  if (id.algorithm >= task.num_algorithms) return Status::InvalidArgument("a round of an algorithm the task does not name");
  drop_session();
  arena->release_to(data_mark);
  session = new (session_mem) Session();
  Session::Options o;
  o.task = &task;
  o.algorithm = id.algorithm;
  o.run = id.run;
  o.agent = index;
  o.problem = local;
  o.entropy = &Impl::Entropy;
  o.entropy_ctx = this;
  const Status st = session->init(*arena, o);
  if (arena->high_water() > stats.workspace_max_bytes) stats.workspace_max_bytes = arena->high_water();
  if (!st.ok()) drop_session();
  return st;
}

Status FwClient::Impl::send_output(const protocol::ClientOutput& out) {
  switch (out.kind) {
    case protocol::MessageKind::kNone: return Status::Ok();
    case protocol::MessageKind::kUpdate: FEDRT_TRY(Encode(out.update, env)); break;
    case protocol::MessageKind::kSecAggAdvertise: FEDRT_TRY(Encode(out.advertise, env)); break;
    case protocol::MessageKind::kSecAggShares: FEDRT_TRY(Encode(out.shares, env)); break;
    case protocol::MessageKind::kSecAggMasked: FEDRT_TRY(Encode(out.masked, env)); break;
    case protocol::MessageKind::kSecAggUnmask: FEDRT_TRY(Encode(out.unmask, env)); break;
    default: return Status::Internal("unexpected session output");
  }
  return send();
}

Status FwClient::Impl::on_round_message() {
  FEDRT_TRY(inbound.decode(env, frame, sizeof frame));
  const protocol::RoundId id = inbound.id();
  protocol::ClientOutput out;
  LogLine l;
  switch (inbound.kind()) {
    case protocol::MessageKind::kAnnouncement: {
      FEDRT_TRY(ensure_session(id));
      protocol::RoundId pending;
      const bool again = session->pending(&pending) && pending == id;
      FEDRT_TRY(session->on_announce(inbound.announcement(), out));
      if (out.kind == protocol::MessageKind::kUpdate || out.kind == protocol::MessageKind::kSecAggAdvertise) {
        l.add(out.kind == protocol::MessageKind::kUpdate ? (again ? "resubmit" : "update") : "secagg advertise");
        l.add(" alg=").add_u(id.algorithm).add(" run=").add_u(id.run).add(" round=").add_i(static_cast<int32_t>(id.round));
        log(l);
        if (out.kind == protocol::MessageKind::kUpdate && !again) ++stats.rounds;
      }
      return send_output(out);
    }
    case protocol::MessageKind::kRoundResult: {
      if (session == nullptr || session->algorithm() != id.algorithm || session->run() != id.run) return Status::Ok();
      protocol::RoundId pending;
      const bool had = session->pending(&pending) && pending == id;
      FEDRT_TRY(session->on_result(inbound.result()));
      if (had) {
        ++stats.results;
        l.add("committed alg=").add_u(id.algorithm).add(" run=").add_u(id.run).add(" round=")
            .add_i(static_cast<int32_t>(id.round)).add(" included=").add(inbound.result().included ? "true" : "false");
        log(l);
      }
      return Status::Ok();
    }
    case protocol::MessageKind::kSecAggKeys:
      if (session == nullptr) return Status::Ok();
      FEDRT_TRY(session->on_secagg_keys(inbound.keys(), out));
      return send_output(out);
    case protocol::MessageKind::kSecAggSharesIn:
      if (session == nullptr) return Status::Ok();
      FEDRT_TRY(session->on_secagg_shares_in(inbound.shares(), out));
      if (out.kind == protocol::MessageKind::kSecAggMasked) {
        ++stats.rounds;  // the masked input is this round's update
        l.add("secagg masked alg=").add_u(id.algorithm).add(" run=").add_u(id.run).add(" round=").add_u(id.round);
        log(l);
      }
      return send_output(out);
    case protocol::MessageKind::kSecAggUnmaskRequest:
      if (session == nullptr) return Status::Ok();
      FEDRT_TRY(session->on_secagg_unmask_request(inbound.unmask_request(), out));
      return send_output(out);
    default: return Status::InvalidArgument("a message a device does not take");
  }
}

Status FwClient::Impl::handle() {
  LogLine l;
  switch (env.which_body) {
    case fedrt_wire_Envelope_welcome_tag: return on_welcome(env.body.welcome);
    case fedrt_wire_Envelope_ack_tag: return Status::Ok();
    case fedrt_wire_Envelope_shutdown_tag:
      log(l.add("shutdown reason=").add(env.body.shutdown.reason));
      shutdown = true;
      return Status::Ok();
    case fedrt_wire_Envelope_error_tag: {
      const auto r = env.body.error.reason;
      log(l.add("coordinator error reason=").add_u(static_cast<uint32_t>(r)).add(": ").add(env.body.error.message));
      if (r == fedrt_wire_ErrorReason_ERROR_IDENTITY || r == fedrt_wire_ErrorReason_ERROR_CONFIG_MISMATCH ||
          r == fedrt_wire_ErrorReason_ERROR_PROTOCOL_VERSION)
        return Status(StatusCode::kPermissionDenied, "refused by the coordinator");
      return Status::Ok();
    }
    default:
      if (!has_task) return Status::FailedPrecondition("a round message before Welcome");
      return on_round_message();
  }
}

// A decoded-or-not frame of `len` bytes in the buffer: handled, or rejected and logged.
void FwClient::Impl::on_frame(size_t len) {
  pb_istream_t is = pb_istream_from_buffer(frame + kBodyOffset, len);
  if (!pb_decode(&is, fedrt_wire_Envelope_fields, &env) || env.which_body == 0) {
    ++stats.rejected_frames;
    log(LogLine().add("rejected frame: DATA_LOSS: undecodable message (").add(PB_GET_ERROR(&is)).add("); skipped"));
    return;
  }
  const Status st = handle();
  if (shutdown || refused || need_samples || st.ok()) return;
  if (st.code() == StatusCode::kPermissionDenied) {
    fatal = st;
    log(LogLine().add("fatal: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
    refused = true;
    return;
  }
  if (st.code() == StatusCode::kUnavailable) {
    state = State::kRetry;
    return;
  }
  ++stats.rejected_frames;
  log(LogLine().add("rejected message: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
}

// One transition of the state machine; again = false when it returns what it needs.
FwClient::Poll FwClient::Impl::step(bool& again) {
  constexpr uint32_t kDrainQuietMs = 500;    // a UART silent this long after a failed session is drained
  constexpr uint32_t kDrainMaxMs = 10000;    // ... or draining stops anyway
  constexpr uint32_t kBackoffMaxMs = 2000;   // reconnect backoff: 100 ms doubling up to this
  Poll p;
  again = true;
  const auto need_link = [&](uint32_t timeout_ms) {
    const uint32_t idle = tls.now() - tls.last_rx_ms();
    p.need = tls.wants_write() ? Need::kWrite : Need::kRead;
    p.wait_ms = idle >= timeout_ms ? 0 : timeout_ms - idle;
    again = false;
    return p;
  };
  switch (state) {
    case State::kStart:
      sessions_before = stats.sessions;
      welcomed = false;
      if (!tls.reset().ok()) {
        state = State::kRetry;
        return p;
      }
      state = State::kHandshake;
      return p;
    case State::kHandshake: {
      const TlsLink::Io io = tls.handshake_step();
      if (io == TlsLink::Io::kEnd) {
        state = State::kRetry;
      } else if (io == TlsLink::Io::kDone) {
        if (!send_hello().ok()) state = State::kRetry;
        else state = State::kWrite;
      } else if (tls.now() - tls.last_rx_ms() >= opt.handshake_timeout_ms) {
        log(LogLine().add("handshake timed out"));
        state = State::kRetry;
      } else {
        return need_link(opt.handshake_timeout_ms);
      }
      return p;
    }
    case State::kWrite: {
      const TlsLink::Io io = tls.flush();
      if (io == TlsLink::Io::kPending) return need_link(opt.idle_timeout_ms);
      out_pending = false;
      if (io == TlsLink::Io::kEnd) state = State::kRetry;
      else if (refused) state = State::kError;
      else state = State::kRead;
      return p;
    }
    case State::kRead: {
      size_t len = 0;
      const TlsLink::Frame f = tls.read_frame(frame + kBodyOffset, kMaxFrame, len);
      if (f == TlsLink::Frame::kEnd) {
        state = State::kRetry;
      } else if (f == TlsLink::Frame::kPending) {
        if (tls.now() - tls.last_rx_ms() < opt.idle_timeout_ms) return need_link(opt.idle_timeout_ms);
        log(LogLine().add("coordinator silent for too long: new session"));
        state = State::kRetry;
      } else if (f == TlsLink::Frame::kOk) {
        on_frame(len);
        if (shutdown) state = State::kDone;
        else if (need_samples) state = State::kSamples;
        else if (out_pending) state = State::kWrite;
        else if (refused) state = State::kError;
      }
      return p;
    }
    case State::kSamples:
      if (!store_sealed) {
        p.need = Need::kSample;
        again = false;
        return p;
      }
      tls.touch();  // the coordinator waited for us, not we for it
      need_samples = false;
      {
        const Status st = on_welcome(env.body.welcome);
        if (!st.ok()) log(LogLine().add("rejected message: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
      }
      state = out_pending ? State::kWrite : (refused ? State::kError : State::kRead);
      return p;
    case State::kRetry:
      if (wait_from == 0 && backoff_ms == 0) {  // the session just ended
        failed = (stats.sessions > sessions_before && welcomed) ? 0 : failed + 1;
        if (failed >= opt.max_failed_sessions) {
          fatal = Status(StatusCode::kUnavailable, "no working session with the coordinator");
          state = State::kError;
          return p;
        }
        tls.close_notify();  // best effort
        out_pending = false;
        log(LogLine().add("new session"));
        if (opt.link.reconnect == nullptr) {
          state = State::kDrain;
          wait_from = tls.now();
          tls.touch();
          return p;
        }
      } else if (tls.now() - wait_from < backoff_ms) {
        p.need = Need::kWait;
        p.wait_ms = backoff_ms - (tls.now() - wait_from);
        again = false;
        return p;
      }
      if (opt.link.reconnect(opt.link.ctx) == 0) {
        backoff_ms = 0;
        wait_from = 0;
        state = State::kStart;
        return p;
      }
      log(LogLine().add("reconnect failed; retrying"));
      backoff_ms = backoff_ms == 0 ? 100 : (2 * backoff_ms < kBackoffMaxMs ? 2 * backoff_ms : kBackoffMaxMs);
      wait_from = tls.now() | 1u;  // nonzero: a backoff is running
      return p;
    case State::kDrain: {
      const int r = tls.drain(64);
      if (r > 0) return p;
      const uint32_t now = tls.now();
      if (r < 0 || now - tls.last_rx_ms() >= kDrainQuietMs || now - wait_from >= kDrainMaxMs) {
        wait_from = 0;
        state = State::kStart;
        return p;
      }
      p.need = Need::kRead;
      p.wait_ms = kDrainQuietMs - (now - tls.last_rx_ms());
      again = false;
      return p;
    }
    case State::kDone:
      p.need = Need::kDone;
      again = false;
      return p;
    case State::kError:
      p.need = Need::kError;
      p.status = fatal.ok() ? Status::Internal("fw client: failed") : fatal;
      again = false;
      return p;
  }
  again = false;
  p.need = Need::kError;
  p.status = Status::Internal("fw client: bad state");
  return p;
}

FwClient::Poll FwClient::poll() {
  if (impl_ == nullptr) {
    Poll p;
    p.need = Need::kError;
    p.status = Status::FailedPrecondition("fw client: not initialised");
    return p;
  }
  bool again = true;
  Poll p;
  while (again) p = impl_->step(again);
  return p;
}

Status FwClient::feed(const float* x, uint32_t dim, float y) {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  Impl& m = *impl_;
  const SampleOptions& so = m.opt.samples;
  if (m.store_sealed) return Status::FailedPrecondition("feed: the samples are complete (feed_done was called)");
  if (x == nullptr || dim == 0) return Status::InvalidArgument("feed: no features");
  if (m.store_rows == 0) {
    if (dim > so.store_dim) return Status::ResourceExhausted("feed: more features than the sample store's dimension");
    m.store_dim = dim;
  } else if (dim != m.store_dim) {
    return Status::InvalidArgument("feed: an example with another number of features than the first one");
  }
  if (m.store_rows >= so.store_rows) return Status::ResourceExhausted("feed: the sample store is full");
  for (uint32_t k = 0; k <= dim; ++k)
    if (!Finite(k < dim ? x[k] : y))
      return Status::InvalidArgument(m.format(LogLine().add("feed: example ").add_u(m.store_rows).add(k < dim ? ", feature " : ", label ")
                                                  .add_u(k < dim ? k : 0).add(": not a finite number (NaN and Inf are refused)")));
  std::memcpy(m.store_x + static_cast<size_t>(m.store_rows) * dim, x, sizeof(float) * dim);
  m.store_y[m.store_rows++] = y;
  return Status::Ok();
}

Status FwClient::feed_done() {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  impl_->store_sealed = true;
  return Status::Ok();
}

size_t FwClient::ImplBytes() { return sizeof(Impl); }

size_t FwClient::TaskBytes(const config::Task& task) {
  const size_t d = task.problem.dim;
  size_t oracle = 0;  // LeastSquaresOracle: Abar_c, bbar_c, the prox factor; logistic: none
  if (task.problem.kind == config::ProblemKind::kLeastSquares)
    oracle = sizeof(float) * (d * d + d + (task.hyper.prox_mu > 0 ? d * d : 0)) + Arena::kAlignment;
  size_t session = 0;
  for (uint32_t a = 0; a < task.num_algorithms; ++a) {
    const size_t n = Session::WorkspaceBytes(task, a);
    if (n > session) session = n;
  }
  return oracle + session;
}

Status FwClient::init(const ClientOptions& options) {
#ifndef FEDRT_FW_TLS_HEAP_BYTES
#define FEDRT_FW_TLS_HEAP_BYTES 8192  // TLS session (about 3.9 KB) + X25519 bignums of a SecAgg+ phase
#endif
  alignas(16) static uint8_t impl_mem[sizeof(Impl)];
  alignas(8) static uint8_t tls_heap[FEDRT_FW_TLS_HEAP_BYTES];
  return init_at(options, impl_mem, tls_heap, sizeof tls_heap);
}

Status FwClient::init_at(const ClientOptions& options, void* memory, uint8_t* tls_heap, size_t tls_heap_bytes) {
  if (impl_ != nullptr) return Status::FailedPrecondition("fw client: already initialised");
  const Identity& id = options.identity;
  if (id.device_id == nullptr || std::strlen(id.device_id) == 0 || std::strlen(id.device_id) > config::kMaxIdChars)
    return Status::InvalidArgument("fw client: device id must have 1..63 characters");
  if (id.psk == nullptr || id.psk_len < 16 || id.psk_len > 64) return Status::InvalidArgument("fw client: PSK must have 16..64 bytes");
  if (options.link.entropy == nullptr && (id.entropy_seed == nullptr || id.entropy_seed_len < 32))
    return Status::InvalidArgument("fw client: no entropy callback and no entropy seed of at least 32 bytes");
  if (options.link.read == nullptr || options.link.write == nullptr || options.link.now_ms == nullptr)
    return Status::InvalidArgument("fw client: the link needs read, write and now_ms");
  const SampleOptions& so = options.samples;
  const bool own = so.x != nullptr || so.pull != nullptr || so.store_rows > 0;
  if (options.problem.table == nullptr && !own)
    return Status::InvalidArgument("fw client: neither a provisioned problem nor own samples");
  if (options.problem.table != nullptr && options.problem.dim <= 0) return Status::InvalidArgument("fw client: problem image without dimension");
  if (so.x != nullptr && (so.y == nullptr || so.dim == 0)) return Status::InvalidArgument("fw client: in-place samples need labels and a dimension");
  if ((so.pull != nullptr || so.store_rows > 0) && (so.store_rows == 0 || so.store_dim == 0))
    return Status::InvalidArgument("fw client: a sample store needs rows and a dimension");
  if (options.workspace == nullptr || (reinterpret_cast<uintptr_t>(options.workspace) & (Arena::kAlignment - 1)) != 0)
    return Status::InvalidArgument("fw client: the workspace must be 16-byte aligned memory");
  if (memory == nullptr || (reinterpret_cast<uintptr_t>(memory) & 15) != 0 || tls_heap == nullptr)
    return Status::InvalidArgument("fw client: the client's memory must be 16-byte aligned");
  impl_ = new (memory) Impl();
  Impl& m = *impl_;
  m.opt = options;
  m.arena = new (m.arena_mem) Arena(options.workspace, options.workspace_bytes);
  if (so.store_rows > 0) {
    auto xs = m.arena->allocate<float>(static_cast<size_t>(so.store_rows) * so.store_dim);
    auto ys = m.arena->allocate<float>(so.store_rows);
    if (!xs.ok() || !ys.ok()) {
      impl_ = nullptr;
      return Status::ResourceExhausted("fw client: the sample store does not fit the workspace");
    }
    m.store_x = xs->data;
    m.store_y = ys->data;
    m.store_mark = m.data_mark = m.arena->used();
  }
  const Status st = m.tls.init(&m.opt, &m.stats, tls_heap, tls_heap_bytes);
  if (!st.ok()) impl_ = nullptr;
  return st;
}

Status FwClient::run() {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  const ByteLink& l = impl_->opt.link;
  for (;;) {
    const Poll p = poll();
    switch (p.need) {
      case Need::kDone: return Status::Ok();
      case Need::kError: return p.status;
      case Need::kSample: return Status::FailedPrecondition("fw client: an own-data task and no samples (feed them)");
      case Need::kRead:
      case Need::kWait:
        if (l.wait != nullptr) l.wait(l.ctx, p.wait_ms, false);
        break;
      case Need::kWrite:
        if (l.wait != nullptr) l.wait(l.ctx, 10, true);
        break;
    }
  }
}

ClientStats FwClient::stats() const {
  ClientStats s;
  if (impl_ == nullptr) return s;
  s = impl_->stats;
  s.tls_heap_max_bytes = impl_->tls.heap_high_water();
  s.tls_heap_bytes = impl_->tls.heap_bytes();
  return s;
}

uint32_t FwClient::Families() { return kFamilies; }

const char* FwClient::BuildName() { return kFamilies == protocol::kAllFamilies ? "all families" : "lsa"; }

}  // namespace fedrt::fw
