// The firmware's device driver (fedrt/fw/client.h): Welcome and the task
// check, and the host of the device agent (protocol/device_agent.h), which
// holds the round logic, as the Linux device's runtime/src/device/session.cc
// is (docs/architecture.md, "Device agent"); the frames move in client_poll.cc.
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
using Session = FwClient::Impl::Session;

}  // namespace

// Why this image's frames cannot carry `task` (nullptr: they can).
// Broadcasts and updates longer than a frame travel in chunks; what still
// travels in one frame bounds the rest, as on a Linux device
// (runtime/src/device/session.cc): the LSA round result (theta_{t+1}),
// and the SecAgg+ masked input.
const char* FwClient::Impl::WireRefusal(const task::Task& t) {
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
  if (agent.pending(&pending)) {
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
// provisioned data or the device's own samples once per task, and says
// whether this device can run it.
Status FwClient::Impl::on_welcome(const fedrt_wire_Welcome& w) {
  task::Task t;
  Status st = DecodeTask(w.task, t);
  if (!st.ok()) return reply(st.message());
  const float *x = nullptr, *y = nullptr;
  uint32_t rows = 0;
  if (t.problem.own_data) {
    const char* why = own_samples(t, &x, &y, &rows);
    if (need_samples) return Status::Ok();  // poll() asks for samples, then comes back here
    if (why != nullptr) return reply(why);
  } else {
    if (opt.problem.table == nullptr) return reply("this device holds no provisioned problem image: it takes tasks on its own data only");
    if (w.device_index != opt.problem.agent_index) {
      LogLine l;
      l.add("provisioned for agent ").add_u(opt.problem.agent_index).add(", assigned ").add_u(w.device_index);
      log(l);
      return reply("the device's data was provisioned for another agent index");
    }
    if (task::ProblemFingerprint(t.problem) != opt.problem.problem_fingerprint)
      return reply("the provisioned data is of another problem than the task's");
  }
  const uint64_t print = task::TaskFingerprint(t);
  if (!has_task || print != task_print || w.device_index != index) {
    agent.assign(nullptr, 0, nullptr);
    has_task = false;
    task = t;
    task_print = print;
    index = w.device_index;
    arena->release_to(store_mark);
    st = task.problem.own_data ? data.build_own(x, y, rows, task, *arena, local) : data.build(opt.problem, task, *arena, local);
    if (!st.ok()) return reply(st.message());
    data_mark = arena->used();
    has_task = true;
    agent.assign(&task, index, &local);
  }
  return accept(w);
}

// The task's oracle is built: accept it in TaskReply if this build, memory and frames can run it.
Status FwClient::Impl::accept(const fedrt_wire_Welcome& w) {
  const size_t left = arena->capacity() - data_mark;
  welcomed = true;
  if (const char* why = agent.refusal(left)) return reply(why);
  LogLine l;
  l.add("registered index=").add_u(index).add(" devices=").add_u(w.num_devices).add(" problem=")
      .add(task::ProblemKindName(task.problem.kind)).add(" d=").add_u(task.problem.dim).add(" algorithms=");
  for (uint32_t a = 0; a < task.num_algorithms; ++a) l.add(a ? "," : "").add(task::AlgorithmName(task.algorithms[a]));
  log(l);
  return reply(nullptr);
}

// Appends "alg=A run=R round=T" to a log line.
LogLine& AddRound(LogLine& l, const protocol::RoundId& id) {
  return l.add("alg=").add_u(id.algorithm).add(" run=").add_u(id.run).add(" round=").add_i(static_cast<int32_t>(id.round));
}

void FwClient::Impl::worked(const protocol::RoundId& id, const protocol::ClientMessage& out, bool again, uint32_t ms) {
  LogLine l;
  l.add(out.kind == protocol::MessageKind::kUpdate ? (again ? "resubmit " : "update ") : "secagg advertise ");
  AddRound(l, id).add(" ms=").add_u(ms);
  if (out.update.report.loss_before == out.update.report.loss_before)  // own data: f_c before and after
    l.add(" loss_before=").add_float(out.update.report.loss_before).add(" loss_after=").add_float(out.update.report.loss_after);
  log(l);
  if (out.kind == protocol::MessageKind::kUpdate && !again) ++stats.rounds;
}

void FwClient::Impl::masked(const protocol::RoundId& id) {
  ++stats.rounds;  // the masked input is this round's update
  LogLine l;
  log(AddRound(l.add("secagg masked "), id));
}

void FwClient::Impl::settled(const protocol::Settled& s) {
  ++stats.results;
  LogLine l;
  AddRound(l.add("committed "), s.id).add(" included=").add(s.included ? "true" : "false");
  log(l);
}

void FwClient::Impl::broadcast_received(const protocol::RoundId& id, uint64_t bytes, uint32_t chunks) {
  stats.chunks_in += chunks;
  LogLine l;
  AddRound(l.add("broadcast "), id).add(" bytes=").add_u(bytes).add(" chunks=").add_u(chunks);
  log(l);
}

void FwClient::Impl::upload_done(const protocol::RoundId& id, uint32_t chunks, bool resumed, uint64_t skipped) {
  LogLine l;
  AddRound(l.add("update chunks "), id).add(" chunks=").add_u(chunks);
  if (resumed) l.add(" resumed from_bytes=").add_u(skipped);
  log(l);
}

bool FwClient::Impl::next_chunk() {
  if (!agent.uploading()) return false;
  if (!agent.send_next_chunk().ok()) {
    log(LogLine().add("update chunk not encoded: transfer dropped"));
    return false;
  }
  return out_pending;
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
      FEDRT_TRY(inbound.decode(env, frame, sizeof frame));
      return agent.on_message(inbound.message());
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
#define FEDRT_FW_TLS_HEAP_BYTES 8192  // TLS 1.3 session and PSA keys: high-water mark 5.7 KB (docs/tls.md)
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
