#include "fedrt/device/session.h"

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

}  // namespace

// Why a Linux device cannot carry the task's messages: models beyond the
// chunked limit, or beyond the inline limit for what still travels in one
// frame (docs/architecture.md, "Chunked transfer").
const char* DeviceSession::WireRefusal(const task::Task& t) {
  if (t.problem.dim > task::kMaxLinuxStreamDim) return "the model dimension exceeds this device's limit (2^27)";
  if (t.problem.dim <= task::kMaxLinuxDim) return nullptr;
  for (uint32_t a = 0; a < t.num_algorithms; ++a)
    if (task::FamilyOf(t.algorithms[a].kind) != task::Family::kOpt)
      return "d > 65536 is for the optimisation family: LSA round results and EM statistics travel in one frame";
  if (t.secagg.enabled) return "d > 65536 with secure aggregation: the masked input travels in one frame";
  if (t.compression.downlink) return "d > 65536 with the compressed downlink: the model delta travels in one frame";
  return nullptr;
}

DeviceSession::DeviceSession(const DeviceOptions& options, const DeviceLog& log)
    : opt_(options), log_(log), agent_(*this) {}
DeviceSession::~DeviceSession() = default;

int DeviceSession::Entropy(void* ctx, uint64_t, uint32_t, uint8_t* out, size_t n) {
  return mbedtls_ctr_drbg_random(static_cast<DeviceSession*>(ctx)->secrets_.drbg(), out, n) == 0 ? 0 : -1;
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
  if (agent_.session() != nullptr && agent_.pending(&pending)) {
    h->set_has_pending(true);
    h->set_pending_algorithm(pending.algorithm);
    h->set_pending_run(pending.run);
    h->set_pending_round(pending.round);
  } else if (agent_.session() == nullptr && saved_ && saved_->pending) {
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
  const Session* session = agent_.session();
  if (session == nullptr || opt_.state_dir.empty()) return Status::Ok();
  SavedSession s;
  s.fingerprint = task::SessionFingerprint(task_, session->algorithm(), session->run());
  s.algorithm = session->algorithm();
  s.run = session->run();
  s.agent = index_;
  protocol::RoundId pending;
  s.pending = session->pending(&pending);
  s.pending_round = pending.round;
  // Written from the session's region, and not kept here: the file has it
  // (a session rebuilt for this algorithm and run reloads it).
  FEDRT_TRY(SaveSession(opt_.state_dir, s, session->state(), session->state_size(), durable));
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
    agent_.assign(nullptr, 0, nullptr);  // a new task (or agent): sessions restart from the state file if it matches
    has_task_ = false;
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
    agent_.assign(&task_, index_, &local_);
    if (saved_ && saved_->agent != index_) {
      log_("warning state was for agent {}, the coordinator says {}: starting fresh", saved_->agent, index_);
      saved_.reset();
    }
  }
  const size_t capacity = opt_.hooks != nullptr && opt_.hooks->capacity > 0 ? opt_.hooks->capacity : kCapacity;
  if (const char* why = agent_.refusal(capacity)) return refuse(why, stop);
  std::string algs;
  for (uint32_t a = 0; a < task_.num_algorithms; ++a)
    algs += (a ? "," : "") + std::string(task::AlgorithmName(task_.algorithms[a]));
  log_("registered index={} devices={} problem={} d={} algorithms={}", index_, w.num_devices(),
       task::ProblemKindName(task_.problem.kind), task_.problem.dim, algs);
  wire::Envelope env;
  env.mutable_task_reply()->set_accepted(true);
  return send_checked(env);
}

Arena* DeviceSession::session_arena(size_t bytes) {
  session_arena_.reset();
  arena_.assign(bytes + 64, 0);
  return &session_arena_.emplace(arena_.data(), arena_.size());
}

// A new session of (algorithm, run): restored from the state file when it was saved for it.
void DeviceSession::session_opened(Session& s, const protocol::RoundId& id) {
  if (saved_ && saved_->state.empty() && saved_->algorithm == id.algorithm && saved_->run == id.run) {
    auto loaded = LoadSavedSession(opt_.state_dir);  // saved by this process: only the file holds the state
    if (loaded.ok() && loaded->has_value()) saved_ = std::move(*loaded);
  }
  if (saved_ && saved_->algorithm == id.algorithm && saved_->run == id.run &&
      saved_->fingerprint == task::SessionFingerprint(task_, id.algorithm, id.run)) {
    Status st = s.restore(saved_->state.data(), saved_->state.size());
    if (st.ok())
      log_("restored alg={} run={} pending={} state={:016x}", id.algorithm, id.run,
           saved_->pending ? std::to_string(saved_->pending_round) : "none", StateDigest(s.state(), s.state_size()));
    else log_("warning state file not restored: {}", st.message());
  }
}

uint32_t DeviceSession::now_ms() const {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

Status DeviceSession::send(const protocol::ClientMessage& m) {
  wire::Envelope env;
  if (!wire::Encode(m, env)) return Status::Internal("device: unexpected session output");
  return send_checked(env);
}

// An update or a secure round's advertisement is out: the local work's log line.
void DeviceSession::worked(const protocol::RoundId& id, const protocol::ClientMessage& out, bool again, uint32_t ms) {
  const protocol::WorkReport& r = out.update.report;  // the session's report, in both kinds
  if (std::isnan(r.loss_before))
    log_("{} alg={} run={} round={} ms={}", again ? "resubmit" : "update", id.algorithm, id.run, id.round, ms);
  else  // own data: the local objective before and after the local work
    log_("{} alg={} run={} round={} ms={} loss_before={:.6g} loss_after={:.6g}", again ? "resubmit" : "update",
         id.algorithm, id.run, id.round, ms, r.loss_before, r.loss_after);
}

// The RoundResult of this device's pending update (persisted): its log line,
// and its report to the progress callback and to take_settled().
void DeviceSession::settled(const protocol::Settled& s) {
  // The digest of what the state file now holds; without one, hashing the
  // whole state every round (~100 bytes a parameter) buys nothing.
  const Session& session = *agent_.session();
  if (opt_.state_dir.empty())
    log_("committed alg={} run={} round={} included={}", s.id.algorithm, s.id.run, s.id.round, s.included);
  else
    log_("committed alg={} run={} round={} included={} state={:016x}", s.id.algorithm, s.id.run, s.id.round, s.included,
         StateDigest(session.state(), session.state_size()));
  RoundReport rep;
  rep.algorithm = task::AlgorithmName(task_.algorithms[s.id.algorithm]);
  rep.algorithm_index = s.id.algorithm;
  rep.run = s.id.run;
  rep.round = s.id.round;
  rep.included = s.included;
  rep.examples = s.report.examples;
  rep.loss_before = s.report.loss_before;
  rep.loss_after = s.report.loss_after;
  rep.duration_ms = s.report.duration_ms;
  settled_report_ = rep;
  settled_ = true;
  if (opt_.progress) opt_.progress(rep);
}

void DeviceSession::upload_done(const protocol::RoundId& id, uint32_t, bool resumed, uint64_t skipped) {
  if (resumed) log_("resumed alg={} run={} round={} from_bytes={}", id.algorithm, id.run, id.round, skipped);
}

// A round message: to the agent, then every chunk of an update it cut.
Status DeviceSession::on_round_message(const wire::Envelope& env) {
  wire::WireError err;
  if (!inbound_.decode(env, err)) return Status(StatusCode::kInvalidArgument, "from coordinator: " + err.message);
  const protocol::ServerMessage m = inbound_.from_coordinator();
  if (m.kind == protocol::MessageKind::kNone)
    return Status::InvalidArgument("from coordinator: a message a device does not take");
  Status st = agent_.on_message(m);
  if (!st.ok()) return Status(st.code(), std::string("from coordinator: ") + st.message());
  while (agent_.uploading()) FEDRT_TRY(agent_.send_next_chunk());
  return Status::Ok();
}

Status DeviceSession::handle(const wire::Envelope& env, const Sender& send, DeviceStop& stop) {
  send_ = &send;
  switch (env.body_case()) {
    case wire::Envelope::kWelcome:
      welcome_ = WelcomeSeen{true, env.welcome().heartbeat_ms()};
      return on_welcome(env.welcome(), stop);
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
