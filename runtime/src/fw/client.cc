// The firmware's device driver (fedrt/fw/client.h): moves frames between the
// TLS link and the protocol session, as runtime/src/net/device_connection.cc
// and device_session.cc do on POSIX (docs/architecture.md, "Round protocol");
// it holds no round logic.
#include "client_impl.h"
#include "fedrt/task/fingerprint.h"
#include "fedrt/task/platform.h"
#include "fedrt/task/names.h"

namespace fedrt::fw {

namespace {

using client_detail::kBodyOffset;
using client_detail::kFamilies;
using client_detail::kMaxFrame;
using client_detail::kProtocolVersion;
using Session = client_detail::Session;

// Why this image's frames cannot carry `task` (nullptr: they can).
// Broadcasts and updates longer than a frame travel in chunks; what still
// travels in one frame bounds the rest, as on a Linux device
// (runtime/src/net/device_session.cc): the LSA round result (theta_{t+1}),
// and the SecAgg+ masked input.
const char* WireRefusal(const task::Task& t) {
  if (Session::Downlink(t)) return "compression.downlink: this firmware takes the broadcast whole (no model deltas)";
  for (uint32_t a = 0; a < t.num_algorithms; ++a) {
    const auto s = Session::Work::ShapeOf(t, t.algorithms[a]);
    if (t.problem.dim > MaxModelDim() && task::FamilyOf(t.algorithms[a].kind) != task::Family::kOpt)
      return "the task's d exceeds this firmware image's frames: LSA round results and EM statistics travel in one frame";
    if (t.secagg.enabled && s.chains * static_cast<size_t>(s.segment_dim) > MaxMaskedScalars())
      return "the task's SecAgg+ input exceeds this firmware image's frames";
  }
  return nullptr;
}

}  // namespace


Status FwClient::Impl::send_hello() {
  std::memset(static_cast<void*>(&env), 0, sizeof env);
  env.which_body = fedrt_wire_Envelope_hello_tag;
  fedrt_wire_Hello& h = env.body.hello;
  h.protocol_version = kProtocolVersion;
  std::strncpy(h.device_id, opt.identity.device_id, sizeof h.device_id - 1);
  std::strncpy(h.platform, task::kPlatformName, sizeof h.platform - 1);
  h.provisioned_problem = opt.problem.table != nullptr ? opt.problem.problem_fingerprint : 0;
  h.max_chunk_bytes = kChunk;  // longer broadcasts arrive in chunks of this size
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
  task::Task t;
  Status st = DecodeTask(w.task, t);
  if (!st.ok()) return reply(st.message());
  if (t.problem.own_data) {
    const float *x = nullptr, *y = nullptr;
    uint32_t rows = 0;
    const char* why = own_samples(t, &x, &y, &rows);
    if (need_samples) return Status::Ok();  // poll() asks for samples, then comes back here
    if (why != nullptr) return reply(why);
    const uint64_t print = task::TaskFingerprint(t);
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
  if (task::ProblemFingerprint(t.problem) != opt.problem.problem_fingerprint)
    return reply("the provisioned data is of another problem than the task's");
  const uint64_t print = task::TaskFingerprint(t);
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
      .add(task::ProblemKindName(task.problem.kind)).add(" d=").add_u(task.problem.dim).add(" algorithms=");
  for (uint32_t a = 0; a < task.num_algorithms; ++a) l.add(a ? "," : "").add(task::AlgorithmName(task.algorithms[a]));
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
    case protocol::MessageKind::kUpdate: return send_update(out.update);  // inline or chunked (client_chunks.cc)
    case protocol::MessageKind::kSecAggAdvertise: FEDRT_TRY(Encode(out.advertise, env)); break;
    case protocol::MessageKind::kSecAggShares: FEDRT_TRY(Encode(out.shares, env)); break;
    case protocol::MessageKind::kSecAggMasked: FEDRT_TRY(Encode(out.masked, env)); break;
    case protocol::MessageKind::kSecAggCheck: FEDRT_TRY(Encode(out.check, env)); break;
    case protocol::MessageKind::kSecAggUnmask: FEDRT_TRY(Encode(out.unmask, env)); break;
    default: return Status::Internal("unexpected session output");
  }
  return send();
}

// An announcement (its broadcast inline, or written in place from chunks):
// the local work, then the update.
Status FwClient::Impl::on_announcement(const protocol::Announcement& a) {
  const protocol::RoundId id = a.id;
  protocol::ClientOutput out;
  LogLine l;
  FEDRT_TRY(ensure_session(id));
  resume = a.resume;
  for (uint32_t k = 0; k < task::kMaxSegments; ++k) resume_bytes[k] = a.resume_bytes[k];
  protocol::RoundId pending;
  const bool again = session->pending(&pending) && pending == id;
  const uint32_t t0 = tls.now();
  FEDRT_TRY(session->on_announce(a, out));
  if (!again) work_ms = tls.now() - t0;
  out.update.report.duration_ms = work_ms;
  if (out.kind == protocol::MessageKind::kUpdate || out.kind == protocol::MessageKind::kSecAggAdvertise) {
    l.add(out.kind == protocol::MessageKind::kUpdate ? (again ? "resubmit" : "update") : "secagg advertise");
    l.add(" alg=").add_u(id.algorithm).add(" run=").add_u(id.run).add(" round=").add_i(static_cast<int32_t>(id.round));
    l.add(" ms=").add_u(work_ms);
    if (out.update.report.loss_before == out.update.report.loss_before)  // own data: f_c before and after
      l.add(" loss_before=").add_float(out.update.report.loss_before).add(" loss_after=").add_float(out.update.report.loss_after);
    log(l);
    if (out.kind == protocol::MessageKind::kUpdate && !again) ++stats.rounds;
  }
  return send_output(out);
}

Status FwClient::Impl::on_round_message() {
  FEDRT_TRY(inbound.decode(env, frame, sizeof frame));
  const protocol::RoundId id = inbound.id();
  protocol::ClientOutput out;
  LogLine l;
  switch (inbound.kind()) {
    case protocol::MessageKind::kAnnouncement:
      if (inbound.announcement().model_bytes > 0) return begin_broadcast(inbound.announcement());  // chunks follow
      return on_announcement(inbound.announcement());
    case protocol::MessageKind::kChunk: return on_chunk(inbound.chunk());
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
      out.masked.report.duration_ms = work_ms;
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
    case protocol::MessageKind::kSecAggChecks:
      if (session == nullptr) return Status::Ok();
      FEDRT_TRY(session->on_secagg_checks(inbound.checks(), out));
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

size_t FwClient::ImplBytes() { return sizeof(Impl); }

size_t FwClient::TaskBytes(const task::Task& task) {
  const size_t d = task.problem.dim;
  size_t oracle = 0;  // LeastSquaresOracle: Abar_c, bbar_c, the prox factor (none above d = 2048); softmax: K logits
  if (task.problem.kind == task::ProblemKind::kLeastSquares && d <= problems::kDenseLeastSquaresMaxDim)
    oracle = sizeof(float) * (d * d + d + (task.hyper.prox_mu > 0 ? d * d : 0)) + Arena::kAlignment;
  if (task.problem.kind == task::ProblemKind::kSoftmax)
    oracle = sizeof(float) * task.problem.classes + Arena::kAlignment;
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
  if (id.device_id == nullptr || std::strlen(id.device_id) == 0 || std::strlen(id.device_id) > task::kMaxIdChars)
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

ClientStats FwClient::stats() const {
  ClientStats s;
  if (impl_ == nullptr) return s;
  s = impl_->stats;
  s.tls_heap_max_bytes = impl_->tls.heap_high_water();
  s.tls_heap_bytes = impl_->tls.heap_bytes();
  return s;
}

uint32_t FwClient::Families() { return kFamilies; }

const char* FwClient::BuildName() {
  return kFamilies == protocol::kAllFamilies ? "all families" : (kFamilies == protocol::kFamilyLsa ? "lsa" : "optimisation");
}

}  // namespace fedrt::fw
