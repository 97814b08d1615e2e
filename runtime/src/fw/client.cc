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

enum class SessionEnd { kShutdown, kRetry, kFatal };

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
  ClientOptions opt;
  ClientStats stats;
  TlsLink tls;
  // A frame (header at 4, body at 8); once decoded, the SecAgg+ tables of the message.
  alignas(8) uint8_t frame[kBodyOffset + kMaxFrame];
  fedrt_wire_Envelope env;  // the decoded message, then the answer
  Inbound inbound;
  alignas(Arena) uint8_t arena_mem[sizeof(Arena)];
  Arena* arena = nullptr;
  size_t data_mark = 0;  // workspace bytes of the local oracle
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
  Status fatal;

  void log(const LogLine& l) { tls.log(l.c_str()); }
  static int Entropy(void* ctx, uint64_t, uint32_t, uint8_t* out, size_t n) {
    return static_cast<Impl*>(ctx)->tls.random(out, n);
  }
  Status send() {
    pb_ostream_t s = pb_ostream_from_buffer(frame + kBodyOffset, kMaxFrame);
    if (!pb_encode(&s, fedrt_wire_Envelope_fields, &env)) return Status::Internal("encoding a message failed");
    return tls.send_frame(frame + kBodyOffset, s.bytes_written);
  }
  void drop_session() {
    if (session != nullptr) session->~Session();
    session = nullptr;
  }
  Status send_hello();
  Status reply(const char* refusal);
  Status on_welcome(const fedrt_wire_Welcome& w);
  Status ensure_session(const protocol::RoundId& id);
  Status send_output(const protocol::ClientOutput& out);
  Status on_round_message();
  Status handle(bool& shutdown);
  SessionEnd run_session();
};

namespace {
FwClient::Impl g_impl;
}  // namespace

Status FwClient::Impl::send_hello() {
  std::memset(static_cast<void*>(&env), 0, sizeof env);
  env.which_body = fedrt_wire_Envelope_hello_tag;
  fedrt_wire_Hello& h = env.body.hello;
  h.protocol_version = kProtocolVersion;
  std::strncpy(h.device_id, opt.identity.device_id, sizeof h.device_id - 1);
  h.provisioned_problem = opt.problem.problem_fingerprint;
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
  if (w.device_index != opt.problem.agent_index) {
    LogLine l;
    l.add("provisioned for agent ").add_u(opt.problem.agent_index).add(", assigned ").add_u(w.device_index);
    log(l);
    return reply("the device's data was provisioned for another agent index");
  }
  if (t.problem.kind == config::ProblemKind::kSoftmax)
    return reply("softmax regression is not in this firmware yet (least squares, logistic, TD(0) and GMM images are)");
  if (t.problem.own_data)
    return reply("tasks on the devices' own data ([data] shards) are not in this firmware yet: its data is a provisioned image");
  if (config::ProblemFingerprint(t.problem) != opt.problem.problem_fingerprint)
    return reply("the provisioned data is of another problem than the task's");
  const uint64_t print = config::TaskFingerprint(t);
  if (!has_task || print != task_print || w.device_index != index) {
    drop_session();
    has_task = false;
    task = t;
    task_print = print;
    index = w.device_index;
    arena->release_to(0);
    st = data.build(opt.problem, task, *arena, local);
    if (!st.ok()) return reply(st.message());
    data_mark = arena->used();
    has_task = true;
  }
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

Status FwClient::Impl::handle(bool& shutdown) {
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

SessionEnd FwClient::Impl::run_session() {
  if (!tls.handshake().ok()) return SessionEnd::kRetry;
  if (!send_hello().ok()) return SessionEnd::kRetry;
  for (;;) {
    size_t len = 0;
    const TlsLink::Frame f = tls.read_frame(frame + kBodyOffset, kMaxFrame, len);
    if (f == TlsLink::Frame::kEnd) return SessionEnd::kRetry;
    if (f == TlsLink::Frame::kSkipped) continue;
    pb_istream_t is = pb_istream_from_buffer(frame + kBodyOffset, len);
    if (!pb_decode(&is, fedrt_wire_Envelope_fields, &env) || env.which_body == 0) {
      ++stats.rejected_frames;
      log(LogLine().add("rejected frame: DATA_LOSS: undecodable message (").add(PB_GET_ERROR(&is)).add("); skipped"));
      continue;
    }
    bool shutdown = false;
    const Status st = handle(shutdown);
    if (shutdown) return SessionEnd::kShutdown;
    if (refused) return SessionEnd::kFatal;
    if (st.ok()) continue;
    if (st.code() == StatusCode::kPermissionDenied) {
      fatal = st;
      log(LogLine().add("fatal: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
      return SessionEnd::kFatal;
    }
    if (st.code() == StatusCode::kUnavailable) return SessionEnd::kRetry;
    ++stats.rejected_frames;
    log(LogLine().add("rejected message: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
  }
}

Status FwClient::init(const ClientOptions& options) {
  if (impl_ != nullptr) return Status::FailedPrecondition("fw client: already initialised");
  const Identity& id = options.identity;
  if (id.device_id == nullptr || std::strlen(id.device_id) == 0 || std::strlen(id.device_id) > config::kMaxIdChars)
    return Status::InvalidArgument("fw client: device id must have 1..63 characters");
  if (id.psk == nullptr || id.psk_len < 16 || id.psk_len > 64) return Status::InvalidArgument("fw client: PSK must have 16..64 bytes");
  if (id.entropy_seed == nullptr || id.entropy_seed_len < 32)
    return Status::InvalidArgument("fw client: entropy seed must have at least 32 bytes");
  if (options.link.read == nullptr || options.link.write == nullptr) return Status::InvalidArgument("fw client: link has no read/write");
  if (options.problem.dim <= 0 || options.problem.table == nullptr) return Status::InvalidArgument("fw client: problem not provisioned");
  if (options.workspace == nullptr || (reinterpret_cast<uintptr_t>(options.workspace) & (Arena::kAlignment - 1)) != 0)
    return Status::InvalidArgument("fw client: the workspace must be 16-byte aligned memory");
  impl_ = &g_impl;
  impl_->opt = options;
  impl_->arena = new (impl_->arena_mem) Arena(options.workspace, options.workspace_bytes);
  return impl_->tls.init(&impl_->opt, &impl_->stats);
}

Status FwClient::run() {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  Impl& m = *impl_;
  uint32_t failed = 0;
  for (;;) {
    const uint32_t sessions_before = m.stats.sessions;
    m.welcomed = false;
    const SessionEnd end = m.run_session();
    if (end == SessionEnd::kShutdown) return Status::Ok();
    if (end == SessionEnd::kFatal) return m.fatal;
    failed = (m.stats.sessions > sessions_before && m.welcomed) ? 0 : failed + 1;
    if (failed >= m.opt.max_failed_sessions) return Status(StatusCode::kUnavailable, "no working session with the coordinator");
    m.tls.end_session();
    m.log(LogLine().add("new session"));
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
