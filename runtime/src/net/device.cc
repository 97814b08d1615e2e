#include "fedrt/net/device.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "fedrt/config/fingerprint.h"
#include "fedrt/config/names.h"
#include "fedrt/net/device_state.h"
#include "fedrt/net/log_time.h"
#include "fedrt/protocol/client_session.h"
#include "fedrt/wire/codec.h"

namespace fedrt::net {

namespace {

using Session = protocol::ClientSession<double>;
constexpr size_t kCapacity = size_t{1} << 30;  // a Linux board's arena: the task's workspace, allocated per session

// FNV-1a of a session's persistent region: the logs show that a restart
// restored exactly what the last commit saved (control variates, memory).
uint64_t Digest(const Session& s) {
  config::Fnv1a h;
  h.bytes(s.state(), s.state_size());
  return h.value();
}

// Lines a device logs at --log-level warn: what went wrong, not the rounds.
bool IsWarning(const std::string& m) {
  for (const char* p : {"warning", "refused", "error", "coordinator error", "disconnected", "connect failed"})
    if (m.rfind(p, 0) == 0) return true;
  return false;
}

// Ends the session loop: the coordinator's Shutdown, or a refusal that a new connection cannot mend.
struct Stop {
  bool stop = false;
  Status status = Status::Ok();
};

class Device {
 public:
  explicit Device(const DeviceOptions& o) : opt_(o) {}
  Status run();

 private:
  template <class... Args>
  void log(fmt::format_string<Args...> f, Args&&... args) {
    if (opt_.quiet || opt_.log_level == DeviceLogLevel::kOff) return;
    std::string msg = fmt::format(f, std::forward<Args>(args)...);
    if (opt_.log_level == DeviceLogLevel::kWarn && !IsWarning(msg)) return;
    std::string line = UtcTimestamp() + " device " + opt_.id + " " + msg + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
  Status send(const wire::Envelope& env);
  Status handle(const wire::Envelope& env, Stop& stop);
  Status on_welcome(const wire::Welcome& w, Stop& stop);
  Status refuse(const std::string& why, Stop& stop);
  Status ensure_session(const protocol::RoundId& id);
  Status on_round_message(const wire::Envelope& env);
  Status send_output(const protocol::ClientOutput& out);
  Status persist(bool durable);
  static int Entropy(void* ctx, uint64_t round_id, uint32_t u, uint8_t* out, size_t n);

  DeviceOptions opt_;
  TlsClient tls_;
  TlsRandom secrets_;  // SecAgg+ secrets: CTR-DRBG seeded from the OS
  std::optional<SavedSession> saved_;
  bool has_task_ = false;
  config::Task task_{};
  uint64_t task_print_ = 0;
  uint32_t index_ = 0;
  std::unique_ptr<problems::Instance> owned_instance_;
  const problems::Instance* instance_ = nullptr;
  protocol::LocalProblem<double> local_{};
  std::vector<uint8_t> arena_;
  std::unique_ptr<Session> session_;
  uint32_t work_ms_ = 0;  // the last local work's wall time (the update's report)
  wire::Inbound inbound_;
};

int Device::Entropy(void* ctx, uint64_t, uint32_t, uint8_t* out, size_t n) {
  return mbedtls_ctr_drbg_random(static_cast<TlsRandom*>(ctx)->drbg(), out, n) == 0 ? 0 : -1;
}

Status Device::send(const wire::Envelope& env) {
  if (opt_.hooks != nullptr && opt_.hooks->before_send) {
    const bool go = opt_.hooks->before_send(env, [this](const std::string& bytes) { return tls_.write_all(bytes); });
    if (!tls_.connected()) return Status(StatusCode::kUnavailable, std::string("connection lost in a test hook"));
    if (!go) return Status::Ok();
  }
  FEDRT_TRY(tls_.write_all(wire::EncodeFrame(env)));
  if (opt_.hooks != nullptr && opt_.hooks->after_send && !opt_.hooks->after_send(env)) {
    tls_.close();
    return Status(StatusCode::kUnavailable, std::string("connection dropped by a test hook"));
  }
  return Status::Ok();
}

Status Device::persist(bool durable) {
  if (session_ == nullptr || opt_.state_dir.empty()) return Status::Ok();
  SavedSession s;
  s.fingerprint = config::SessionFingerprint(task_, session_->algorithm(), session_->run());
  s.algorithm = session_->algorithm();
  s.run = session_->run();
  s.agent = index_;
  protocol::RoundId pending;
  s.pending = session_->pending(&pending);
  s.pending_round = pending.round;
  s.state.assign(session_->state(), session_->state() + session_->state_size());
  FEDRT_TRY(SaveSession(opt_.state_dir, s, durable));
  saved_ = std::move(s);
  return Status::Ok();
}

Status Device::refuse(const std::string& why, Stop& stop) {
  wire::Envelope env;
  env.mutable_task_reply()->set_accepted(false);
  env.mutable_task_reply()->set_reason(why.substr(0, config::kMaxReasonChars));
  log("refused task reason={}", why);
  (void)send(env);
  stop.stop = true;
  stop.status = Status(StatusCode::kFailedPrecondition, "cannot take the coordinator's task: " + why);
  return Status::Ok();
}

// Welcome: the agent index and the task. Builds the local problem once per
// task and says whether this device can run it.
Status Device::on_welcome(const wire::Welcome& w, Stop& stop) {
  config::Task task;
  Status st = wire::DecodeTask(w.task(), task);
  if (!st.ok()) return refuse(st.message(), stop);
  const uint64_t print = config::TaskFingerprint(task);
  if (!has_task_ || print != task_print_ || w.device_index() != index_) {
    session_.reset();  // a new task (or agent): sessions restart from the state file if it matches
    instance_ = nullptr;
    owned_instance_.reset();
    if (opt_.hooks != nullptr && opt_.hooks->instance != nullptr) {
      instance_ = opt_.hooks->instance;
    } else {
      if (task.problem.own_data && opt_.own_data.empty())
        return refuse("the task trains on each device's own data: start the device with --data SHARD", stop);
      if (task.problem.from_files && !task.problem.own_data && opt_.data.bundle.empty() && opt_.data.csv.empty())
        return refuse("the task's problem is read from files: start the device with --data", stop);
      auto inst = task.problem.own_data ? problems::Instance::BuildOwn(task, w.device_index(), opt_.own_data)
                                        : problems::Instance::Build(task, opt_.data);
      if (!inst.ok()) return refuse(fmt::format("local data: {}", inst.status().message()), stop);
      owned_instance_ = std::move(*inst);
      instance_ = owned_instance_.get();
    }
    if (config::ProblemFingerprint(instance_->problem()) != config::ProblemFingerprint(task.problem))
      return refuse("the local data differs from the coordinator's problem (fingerprint mismatch)", stop);
    if (w.device_index() >= instance_->agents())
      return refuse(fmt::format("agent index {} but the problem has {} agents", w.device_index(), instance_->agents()), stop);
    task_ = task;
    task_print_ = print;
    index_ = w.device_index();
    local_ = instance_->local(index_);
    has_task_ = true;
    if (saved_ && saved_->agent != index_) {
      log("warning state was for agent {}, the coordinator says {}: starting fresh", saved_->agent, index_);
      saved_.reset();
    }
  }
  const size_t capacity = opt_.hooks != nullptr && opt_.hooks->capacity > 0 ? opt_.hooks->capacity : kCapacity;
  if (const char* why = Session::Refusal(task_, local_, capacity)) return refuse(why, stop);
  std::string algs;
  for (uint32_t a = 0; a < task_.num_algorithms; ++a)
    algs += (a ? "," : "") + std::string(config::AlgorithmName(task_.algorithms[a]));
  log("registered index={} devices={} problem={} d={} algorithms={}", index_, w.num_devices(),
      config::ProblemKindName(task_.problem.kind), task_.problem.dim, algs);
  wire::Envelope env;
  env.mutable_task_reply()->set_accepted(true);
  return send(env);
}

// The session of (algorithm, run), restored from the state file when it was saved for it.
Status Device::ensure_session(const protocol::RoundId& id) {
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
  o.entropy = &Device::Entropy;
  o.entropy_ctx = &secrets_;
  auto s = std::make_unique<Session>();
  FEDRT_TRY(s->init(arena, o));
  if (saved_ && saved_->algorithm == id.algorithm && saved_->run == id.run &&
      saved_->fingerprint == config::SessionFingerprint(task_, id.algorithm, id.run)) {
    Status st = s->restore(saved_->state.data(), saved_->state.size());
    if (st.ok())
      log("restored alg={} run={} pending={} state={:016x}", id.algorithm, id.run,
          saved_->pending ? std::to_string(saved_->pending_round) : "none", Digest(*s));
    else log("warning state file not restored: {}", st.message());
  }
  session_ = std::move(s);
  return Status::Ok();
}

Status Device::send_output(const protocol::ClientOutput& out) {
  wire::Envelope env;
  switch (out.kind) {
    case protocol::MessageKind::kNone: return Status::Ok();
    case protocol::MessageKind::kUpdate: wire::Encode(out.update, env); break;
    case protocol::MessageKind::kSecAggAdvertise: wire::Encode(out.advertise, env); break;
    case protocol::MessageKind::kSecAggShares: wire::Encode(out.shares, /*incoming=*/false, env); break;
    case protocol::MessageKind::kSecAggMasked: wire::Encode(out.masked, env); break;
    case protocol::MessageKind::kSecAggUnmask: wire::Encode(out.unmask, env); break;
    default: return Status::Internal("device: unexpected session output");
  }
  return send(env);
}

Status Device::on_round_message(const wire::Envelope& env) {
  wire::WireError err;
  if (!inbound_.decode(env, err)) return Status(StatusCode::kInvalidArgument, "from coordinator: " + err.message);
  protocol::ClientOutput out;
  switch (inbound_.kind()) {
    case protocol::MessageKind::kAnnouncement: {
      const protocol::Announcement& a = inbound_.announcement();
      FEDRT_TRY(ensure_session(a.id));
      protocol::RoundId pending;
      const bool again = session_->pending(&pending) && pending == a.id;
      const auto t0 = std::chrono::steady_clock::now();
      FEDRT_TRY(session_->on_announce(a, out));
      if (!again)
        work_ms_ = static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
      out.update.report.duration_ms = work_ms_;
      FEDRT_TRY(persist(/*durable=*/true));  // before the update leaves
      if (out.kind == protocol::MessageKind::kUpdate || out.kind == protocol::MessageKind::kSecAggAdvertise) {
        if (std::isnan(session_->report().loss_before))
          log("{} alg={} run={} round={} ms={}", again ? "resubmit" : "update", a.id.algorithm, a.id.run, a.id.round,
              work_ms_);
        else  // own data: the local objective before and after the local work (out.update holds the report in both kinds)
          log("{} alg={} run={} round={} ms={} loss_before={:.6g} loss_after={:.6g}", again ? "resubmit" : "update",
              a.id.algorithm, a.id.run, a.id.round, work_ms_, session_->report().loss_before,
              session_->report().loss_after);
      }
      return send_output(out);
    }
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
        log("committed alg={} run={} round={} included={} state={:016x}", r.id.algorithm, r.id.run, r.id.round,
            r.included, Digest(*session_));
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
    default: return Status::InvalidArgument("from coordinator: a message a device does not take");
  }
}

Status Device::handle(const wire::Envelope& env, Stop& stop) {
  switch (env.body_case()) {
    case wire::Envelope::kWelcome: return on_welcome(env.welcome(), stop);
    case wire::Envelope::kAck: return Status::Ok();
    case wire::Envelope::kShutdown:
      log("shutdown reason={}", env.shutdown().reason());
      stop.stop = true;
      return Status::Ok();
    case wire::Envelope::kError: {
      const auto r = env.error().reason();
      log("coordinator error reason={}: {}", wire::ErrorReasonName(r), env.error().message());
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

Status Device::run() {
  FEDRT_TRY(tls_.init(opt_.credentials));
  FEDRT_TRY(secrets_.init("fedrt-secagg " + opt_.id));
  auto loaded = LoadSavedSession(opt_.state_dir);
  if (!loaded.ok()) return loaded.status();
  saved_ = std::move(*loaded);
  if (saved_)
    log("state alg={} run={} agent={} pending={} from {}", saved_->algorithm, saved_->run, saved_->agent,
        saved_->pending ? std::to_string(saved_->pending_round) : std::string("none"), opt_.state_dir);
  long backoff = 100;
  auto last_ok = std::chrono::steady_clock::now();
  std::vector<uint8_t> buf(16384);
  for (;;) {
    Status st = tls_.connect(opt_.host, opt_.port, 1000);
    if (!st.ok()) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - last_ok).count();
      if (waited > opt_.give_up_ms)
        return Status(StatusCode::kUnavailable,
                      fmt::format("no connection to {}:{} for {} ms: {}", opt_.host, opt_.port, waited, st.message()));
      log("connect failed: {}; retry in {} ms", st.message(), backoff);
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
      backoff = std::min<long>(backoff * 2, 3000);
      continue;
    }
    log("connected {}:{}", opt_.host, opt_.port);
    wire::Envelope hello;
    wire::Hello* h = hello.mutable_hello();
    h->set_protocol_version(wire::kProtocolVersion);
    h->set_device_id(opt_.id);
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
    st = tls_.write_all(wire::EncodeFrame(hello));
    wire::FrameDecoder dec;
    Stop stop;
    while (st.ok() && !stop.stop) {
      auto n = tls_.read_some(buf.data(), buf.size());
      if (!n.ok()) {
        st = n.status();
        break;
      }
      if (*n == 0) continue;
      last_ok = std::chrono::steady_clock::now();
      dec.feed(buf.data(), *n);
      std::string body;
      wire::WireError err;
      int k = 0;
      while (!stop.stop && (k = dec.next(body, err)) == 1) {
        wire::Envelope env;
        if (!wire::ParseEnvelope(body, env, err)) {
          st = Status(StatusCode::kDataLoss, "from coordinator: " + err.message);
          break;
        }
        Status hs = handle(env, stop);
        if (!hs.ok()) {
          log("error {}", hs.message());
          if (hs.code() == StatusCode::kUnavailable || hs.code() == StatusCode::kDataLoss) {
            st = hs;
            break;
          }
        }
        if (env.body_case() == wire::Envelope::kWelcome) backoff = 100;
      }
      if (k < 0) st = Status(StatusCode::kDataLoss, "from coordinator: " + err.message);
    }
    tls_.close();
    if (stop.stop) return stop.status;
    log("disconnected: {}; reconnect in {} ms", st.message(), backoff);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min<long>(backoff * 2, 3000);
    last_ok = std::chrono::steady_clock::now();
  }
}

}  // namespace

Status RunDevice(const DeviceOptions& options) {
  Device d(options);
  return d.run();
}

}  // namespace fedrt::net
