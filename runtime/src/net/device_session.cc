#include "fedrt/net/device_session.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/task/names.h"
#include "fedrt/data/shard.h"
#include "fedrt/user_model.h"

namespace fedrt::net {

namespace {

constexpr size_t kCapacity = size_t{1} << 30;  // a Linux board's arena: the task's workspace, allocated per session

// The labels the task's model takes (docs/data.md): binary for logistic
// regression, class indices for softmax, any finite number otherwise.
data::LabelKind LabelKindFor(const task::ProblemSpec& p) {
  if (p.kind == task::ProblemKind::kLogistic) return data::LabelKind::kBinary;
  if (p.kind == task::ProblemKind::kGmm) return data::LabelKind::kNone;  // a mixture's points have no label
  return p.kind == task::ProblemKind::kSoftmax ? data::LabelKind::kClass : data::LabelKind::kReal;
}

// Why a Linux device cannot carry the task's messages: models beyond the
// chunked limit, or beyond the inline limit for what still travels in one
// frame (docs/architecture.md, "Chunked transfer").
const char* WireRefusal(const task::Task& t) {
  if (t.problem.dim > task::kMaxLinuxStreamDim) return "the model dimension exceeds this device's limit (2^27)";
  if (t.problem.dim <= task::kMaxLinuxDim) return nullptr;
  for (uint32_t a = 0; a < t.num_algorithms; ++a)
    if (task::FamilyOf(t.algorithms[a].kind) != task::Family::kOpt)
      return "d > 65536 is for the optimisation family: LSA round results and EM statistics travel in one frame";
  if (t.secagg.enabled) return "d > 65536 with secure aggregation: the masked input travels in one frame";
  if (t.compression.downlink) return "d > 65536 with the compressed downlink: the model delta travels in one frame";
  return nullptr;
}

}  // namespace

DeviceSession::DeviceSession(const DeviceOptions& options, const DeviceLog& log) : opt_(options), log_(log) {}
DeviceSession::~DeviceSession() = default;

int DeviceSession::Entropy(void* ctx, uint64_t, uint32_t, uint8_t* out, size_t n) {
  return mbedtls_ctr_drbg_random(static_cast<TlsRandom*>(ctx)->drbg(), out, n) == 0 ? 0 : -1;
}

Status DeviceSession::init() {
  FEDRT_TRY(secrets_.init("fedrt-secagg " + opt_.id));
  auto loaded = LoadSavedSession(opt_.state_dir);
  if (!loaded.ok()) return loaded.status();
  saved_ = std::move(*loaded);
  if (saved_)
    log_("state alg={} run={} agent={} pending={} from {}", saved_->algorithm, saved_->run, saved_->agent,
         saved_->pending ? std::to_string(saved_->pending_round) : std::string("none"), opt_.state_dir);
  return Status::Ok();
}

void DeviceSession::fill_hello(wire::Hello* h) const {
  protocol::RoundId pending;
  if (session_ != nullptr && session_->pending(&pending)) {
    h->set_has_pending(true);
    h->set_pending_algorithm(pending.algorithm);
    h->set_pending_run(pending.run);
    h->set_pending_round(pending.round);
  } else if (session_ == nullptr && saved_ && saved_->pending) {
    h->set_has_pending(true);
    h->set_pending_algorithm(saved_->algorithm);
    h->set_pending_run(saved_->run);
    h->set_pending_round(saved_->pending_round);
  }
}

bool DeviceSession::take_settled(RoundReport* report) {
  if (!settled_) return false;
  settled_ = false;
  *report = settled_report_;
  return true;
}

Status DeviceSession::send_checked(const wire::Envelope& env) { return (*send_)(env); }

Status DeviceSession::persist(bool durable) {
  if (session_ == nullptr || opt_.state_dir.empty()) return Status::Ok();
  SavedSession s;
  s.fingerprint = task::SessionFingerprint(task_, session_->algorithm(), session_->run());
  s.algorithm = session_->algorithm();
  s.run = session_->run();
  s.agent = index_;
  protocol::RoundId pending;
  s.pending = session_->pending(&pending);
  s.pending_round = pending.round;
  // Written from the session's region, and not kept here: the file has it
  // (a session rebuilt for this algorithm and run reloads it).
  FEDRT_TRY(SaveSession(opt_.state_dir, s, session_->state(), session_->state_size(), durable));
  saved_ = std::move(s);
  return Status::Ok();
}

Status DeviceSession::refuse(const std::string& why, DeviceStop& stop) {
  wire::Envelope env;
  env.mutable_task_reply()->set_accepted(false);
  env.mutable_task_reply()->set_reason(why.substr(0, task::kMaxReasonChars));
  log_("refused task reason={}", why);
  (void)send_checked(env);
  stop.stop = true;
  stop.status = Status(StatusCode::kFailedPrecondition, "cannot take the coordinator's task: " + why);
  return Status::Ok();
}

// This device's local problem of `task`: the hooks' shared instance, its own
// data (a shard file or the caller's source), or data built from the task.
// A reason the device cannot take the task goes to *refusal.
Status DeviceSession::build_instance(const task::Task& task, uint32_t index, std::string* refusal) {
  if (opt_.hooks != nullptr && opt_.hooks->instance != nullptr) {
    instance_ = opt_.hooks->instance;
    return Status::Ok();
  }
  if (task.problem.own_data && opt_.source == nullptr && opt_.own_data.empty()) {
    *refusal = "the task trains on each device's own data: start the device with --data SHARD";
    return Status::Ok();
  }
  if (!task.problem.own_data && task.problem.from_files && opt_.data.bundle.empty() && opt_.data.csv.empty()) {
    *refusal = "the task's problem is read from files: start the device with --data";
    return Status::Ok();
  }
  if (task.problem.kind == task::ProblemKind::kUser && opt_.model == nullptr) {
    *refusal = "a user-defined model ([model] kind = \"user\"): only a program built on fedrt::Device with the model "
               "can train it";
    return Status::Ok();
  }
  if (task.problem.own_data && opt_.source != nullptr && task::FamilyOf(task.problem.kind) == task::Family::kLsa) {
    *refusal = "TD(0) transitions are read from a shard file (data), not from a data source";
    return Status::Ok();
  }
  auto build = [&]() -> Result<std::unique_ptr<problems::Instance>> {
    if (!task.problem.own_data) {
      problems::DataFiles files = opt_.data;
      files.only_agent = static_cast<int>(index);  // a generated problem: this agent's data only
      return problems::Instance::Build(task, files);
    }
    if (task.problem.kind == task::ProblemKind::kUser) {
      auto shard = opt_.source != nullptr
                       ? data::ReadSource(*opt_.source, data::LabelKind::kReal, "data source")
                       : data::ReadShard(static_cast<data::ShardFormat>(task.problem.data_format), opt_.own_data,
                                         task.problem.label, data::LabelKind::kReal);
      if (!shard.ok()) return shard.status();
      return problems::Instance::BuildOwnUser(task, index, shard.take(), *opt_.model);
    }
    if (opt_.source == nullptr) return problems::Instance::BuildOwn(task, index, opt_.own_data);
    auto shard = data::ReadSource(*opt_.source, LabelKindFor(task.problem), "data source", task.problem.classes);
    if (!shard.ok()) return shard.status();
    return problems::Instance::BuildOwn(task, index, *shard);
  };
  auto inst = build();
  if (!inst.ok()) {
    *refusal = fmt::format("local data: {}", inst.status().message());
    return Status::Ok();
  }
  owned_instance_ = std::move(*inst);
  instance_ = owned_instance_.get();
  return Status::Ok();
}

// Welcome: the agent index and the task. Builds the local problem once per
// task and says whether this device can run it.
Status DeviceSession::on_welcome(const wire::Welcome& w, DeviceStop& stop) {
  task::Task task;
  Status st = wire::DecodeTask(w.task(), task);
  if (!st.ok()) return refuse(st.message(), stop);
  const uint64_t print = task::TaskFingerprint(task);
  if (!has_task_ || print != task_print_ || w.device_index() != index_) {
    session_.reset();  // a new task (or agent): sessions restart from the state file if it matches
    instance_ = nullptr;
    owned_instance_.reset();
    std::string refusal;
    FEDRT_TRY(build_instance(task, w.device_index(), &refusal));
    if (!refusal.empty()) return refuse(refusal, stop);
    if (task::ProblemFingerprint(instance_->problem()) != task::ProblemFingerprint(task.problem))
      return refuse("the local data differs from the coordinator's problem (fingerprint mismatch)", stop);
    if (w.device_index() >= instance_->agents())
      return refuse(fmt::format("agent index {} but the problem has {} agents", w.device_index(), instance_->agents()), stop);
    task_ = task;
    task_print_ = print;
    index_ = w.device_index();
    local_ = instance_->local(index_);
    has_task_ = true;
    if (saved_ && saved_->agent != index_) {
      log_("warning state was for agent {}, the coordinator says {}: starting fresh", saved_->agent, index_);
      saved_.reset();
    }
  }
  const size_t capacity = opt_.hooks != nullptr && opt_.hooks->capacity > 0 ? opt_.hooks->capacity : kCapacity;
  if (const char* why = WireRefusal(task_)) return refuse(why, stop);
  if (const char* why = Session::Refusal(task_, local_, capacity)) return refuse(why, stop);
  std::string algs;
  for (uint32_t a = 0; a < task_.num_algorithms; ++a)
    algs += (a ? "," : "") + std::string(task::AlgorithmName(task_.algorithms[a]));
  log_("registered index={} devices={} problem={} d={} algorithms={}", index_, w.num_devices(),
       task::ProblemKindName(task_.problem.kind), task_.problem.dim, algs);
  wire::Envelope env;
  env.mutable_task_reply()->set_accepted(true);
  return send_checked(env);
}

// The session of (algorithm, run), restored from the state file when it was saved for it.
Status DeviceSession::ensure_session(const protocol::RoundId& id) {
  if (session_ != nullptr && session_->algorithm() == id.algorithm && session_->run() == id.run) return Status::Ok();
  if (!has_task_) return Status::FailedPrecondition("a round message before Welcome");
  if (id.algorithm >= task_.num_algorithms) return Status::InvalidArgument("a round of an algorithm the task does not name");
  session_.reset();
  arena_.assign(Session::WorkspaceBytes(task_, id.algorithm) + 64, 0);
  Arena arena(arena_.data(), arena_.size());
  Session::Options o;
  o.task = &task_;
  o.algorithm = id.algorithm;
  o.run = id.run;
  o.agent = index_;
  o.problem = local_;
  o.entropy = &DeviceSession::Entropy;
  o.entropy_ctx = &secrets_;
  auto s = std::make_unique<Session>();
  FEDRT_TRY(s->init(arena, o));
  if (saved_ && saved_->state.empty() && saved_->algorithm == id.algorithm && saved_->run == id.run) {
    auto loaded = LoadSavedSession(opt_.state_dir);  // saved by this process: only the file holds the state
    if (loaded.ok() && loaded->has_value()) saved_ = std::move(*loaded);
  }
  if (saved_ && saved_->algorithm == id.algorithm && saved_->run == id.run &&
      saved_->fingerprint == task::SessionFingerprint(task_, id.algorithm, id.run)) {
    Status st = s->restore(saved_->state.data(), saved_->state.size());
    if (st.ok())
      log_("restored alg={} run={} pending={} state={:016x}", id.algorithm, id.run,
           saved_->pending ? std::to_string(saved_->pending_round) : "none", StateDigest(s->state(), s->state_size()));
    else log_("warning state file not restored: {}", st.message());
  }
  session_ = std::move(s);
  return Status::Ok();
}

Status DeviceSession::send_output(const protocol::ClientOutput& out) {
  wire::Envelope env;
  switch (out.kind) {
    case protocol::MessageKind::kNone: return Status::Ok();
    case protocol::MessageKind::kUpdate: return send_update(out.update);
    case protocol::MessageKind::kSecAggAdvertise: wire::Encode(out.advertise, env); break;
    case protocol::MessageKind::kSecAggShares: wire::Encode(out.shares, /*incoming=*/false, env); break;
    case protocol::MessageKind::kSecAggMasked: wire::Encode(out.masked, env); break;
    case protocol::MessageKind::kSecAggCheck: wire::Encode(out.check, /*incoming=*/false, env); break;
    case protocol::MessageKind::kSecAggUnmask: wire::Encode(out.unmask, env); break;
    default: return Status::Internal("device: unexpected session output");
  }
  return send_checked(env);
}

// The RoundResult of this device's pending update: its report, to the
// progress callback and to take_settled().
void DeviceSession::settle(const protocol::RoundResult& r) {
  RoundReport rep;
  rep.algorithm = task::AlgorithmName(task_.algorithms[r.id.algorithm]);
  rep.algorithm_index = r.id.algorithm;
  rep.run = r.id.run;
  rep.round = r.id.round;
  rep.included = r.included;
  const bool known = work_id_ == r.id;  // else a result replayed after a restart: the work is not known
  rep.examples = known ? work_report_.examples : 0;
  rep.loss_before = known ? work_report_.loss_before : std::nan("");
  rep.loss_after = known ? work_report_.loss_after : std::nan("");
  rep.duration_ms = known ? work_ms_ : 0;
  settled_report_ = rep;
  settled_ = true;
  if (opt_.progress) opt_.progress(rep);
}

// An announcement (its broadcast whole, or written in place from chunks):
// the local work, then the update.
Status DeviceSession::on_announcement(const protocol::Announcement& a) {
  protocol::ClientOutput out;
  FEDRT_TRY(ensure_session(a.id));
  resume_ = a.resume;
  for (uint32_t k = 0; k < task::kMaxSegments; ++k) resume_bytes_[k] = a.resume_bytes[k];
  protocol::RoundId pending;
  const bool again = session_->pending(&pending) && pending == a.id;
  const auto t0 = std::chrono::steady_clock::now();
  FEDRT_TRY(session_->on_announce(a, out));
  if (!again) {
    work_ms_ = static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    work_id_ = a.id;
    work_report_ = session_->report();
  }
  out.update.report.duration_ms = work_ms_;
  FEDRT_TRY(persist(/*durable=*/true));  // before the update leaves
  if (out.kind == protocol::MessageKind::kUpdate || out.kind == protocol::MessageKind::kSecAggAdvertise) {
    if (std::isnan(session_->report().loss_before))
      log_("{} alg={} run={} round={} ms={}", again ? "resubmit" : "update", a.id.algorithm, a.id.run, a.id.round,
           work_ms_);
    else  // own data: the local objective before and after the local work (out.update holds the report in both kinds)
      log_("{} alg={} run={} round={} ms={} loss_before={:.6g} loss_after={:.6g}", again ? "resubmit" : "update",
           a.id.algorithm, a.id.run, a.id.round, work_ms_, session_->report().loss_before,
           session_->report().loss_after);
  }
  return send_output(out);
}

Status DeviceSession::on_round_message(const wire::Envelope& env) {
  wire::WireError err;
  if (!inbound_.decode(env, err)) return Status(StatusCode::kInvalidArgument, "from coordinator: " + err.message);
  protocol::ClientOutput out;
  switch (inbound_.kind()) {
    case protocol::MessageKind::kAnnouncement:
      if (inbound_.announcement().model_bytes > 0) return begin_broadcast(env);  // chunks follow
      return on_announcement(inbound_.announcement());
    case protocol::MessageKind::kChunk: return on_chunk(inbound_.chunk());
    case protocol::MessageKind::kRoundResult: {
      const protocol::RoundResult& r = inbound_.result();
      if (session_ == nullptr || session_->algorithm() != r.id.algorithm || session_->run() != r.id.run) {
        if (!saved_ || saved_->algorithm != r.id.algorithm || saved_->run != r.id.run) return Status::Ok();
        FEDRT_TRY(ensure_session(r.id));  // a result replayed after a restart
      }
      protocol::RoundId pending;
      const bool had = session_->pending(&pending) && pending == r.id;
      FEDRT_TRY(session_->on_result(r));
      if (had) {
        FEDRT_TRY(persist(/*durable=*/false));  // a lost commit is replayed (device_state.h)
        // The digest of what the state file now holds; without one, hashing
        // the whole state every round (~100 bytes a parameter) buys nothing.
        if (opt_.state_dir.empty())
          log_("committed alg={} run={} round={} included={}", r.id.algorithm, r.id.run, r.id.round, r.included);
        else
          log_("committed alg={} run={} round={} included={} state={:016x}", r.id.algorithm, r.id.run, r.id.round,
               r.included, StateDigest(session_->state(), session_->state_size()));
        settle(r);
      }
      return Status::Ok();
    }
    case protocol::MessageKind::kSecAggKeys:
      if (session_ == nullptr) return Status::Ok();
      FEDRT_TRY(session_->on_secagg_keys(inbound_.keys(), out));
      return send_output(out);
    case protocol::MessageKind::kSecAggSharesIn:
      if (session_ == nullptr) return Status::Ok();
      FEDRT_TRY(session_->on_secagg_shares_in(inbound_.shares(), out));
      out.masked.report.duration_ms = work_ms_;
      return send_output(out);
    case protocol::MessageKind::kSecAggUnmaskRequest:
      if (session_ == nullptr) return Status::Ok();
      FEDRT_TRY(session_->on_secagg_unmask_request(inbound_.unmask_request(), out));
      return send_output(out);
    case protocol::MessageKind::kSecAggChecks:
      if (session_ == nullptr) return Status::Ok();
      FEDRT_TRY(session_->on_secagg_checks(inbound_.check(), out));
      return send_output(out);
    default: return Status::InvalidArgument("from coordinator: a message a device does not take");
  }
}

Status DeviceSession::handle(const wire::Envelope& env, const Sender& send, DeviceStop& stop) {
  send_ = &send;
  switch (env.body_case()) {
    case wire::Envelope::kWelcome: return on_welcome(env.welcome(), stop);
    case wire::Envelope::kAck: return Status::Ok();
    case wire::Envelope::kShutdown:
      log_("shutdown reason={}", env.shutdown().reason());
      stop.stop = true;
      return Status::Ok();
    case wire::Envelope::kError: {
      const auto r = env.error().reason();
      log_("coordinator error reason={}: {}", wire::ErrorReasonName(r), env.error().message());
      if (r == wire::ERROR_IDENTITY || r == wire::ERROR_CONFIG_MISMATCH || r == wire::ERROR_PROTOCOL_VERSION) {
        stop.stop = true;
        stop.status = Status(StatusCode::kPermissionDenied, fmt::format("refused by the coordinator: {}: {}",
                                                                        wire::ErrorReasonName(r), env.error().message()));
      }
      return Status::Ok();
    }
    default: return on_round_message(env);
  }
}

}  // namespace fedrt::net
