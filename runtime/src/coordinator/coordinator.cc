#include "coordinator_impl.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <asio.hpp>
#include <fmt/format.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/task/names.h"
#include "fedrt/coordinator/connection.h"
#include "fedrt/coordinator/log.h"
#include "fedrt/coordinator/view.h"
#include "fedrt/coordinator/fleet_result.h"
#include "fedrt/ops/fleet_monitor.h"
#include "fedrt/coordinator/fleet_rounds.h"
#include "fedrt/ops/http_endpoint.h"
#include "fedrt/keys/watch.h"
#include "fedrt/keys/registry.h"
#include "fedrt/coordinator/state_store.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/report/outputs.h"

namespace fedrt::net::detail {

Status Coordinator::init() {
  FEDRT_TRY(prepare_task());
  const uint32_t agents = task_.problem.agents;
  const std::string keys = opt_.network.keys;
  FEDRT_TRY(registry_.load(keys + "/registry.tsv", agents));
  if (registry_.provisioned() < agents)
    CoordinatorWarn("warning registry={} provisions {} of the experiment's {} agents", keys + "/registry.tsv",
                   registry_.provisioned(), agents);
  FEDRT_TRY(tls_.init(keys + "/ca.crt", keys + "/coordinator.crt", keys + "/coordinator.key", registry_.entries(),
                      opt_.network.auth, opt_.network.psk_forward_secrecy, opt_.network.tls_min_version == "1.2"));
  FEDRT_TRY(load_gateways());
  auto st = StateStore::Open(opt_.network.state, opt_.accept_rollback);
  if (!st.ok()) return st.status();
  store_ = std::move(*st);
  if (store_->rolled_back_from() > 0)
    CoordinatorWarn("warning state={} rolled_back_from={} committed_rounds={}: resuming from what the db holds "
                    "(--accept-rollback); the rounds after it run again",
                    opt_.network.state, store_->rolled_back_from(), store_->committed_rounds());
  std::string algs;
  for (const auto& n : names_) algs += (algs.empty() ? "" : ",") + n;
  FEDRT_TRY(store_->check_experiment(fmt::format("task={:016x};algorithms={}", task::TaskFingerprint(task_), algs)));
  if (opt_.started != nullptr) *opt_.started = true;

  {
    report::SimResult described;
    eval_->describe(described);
    task::Task shown = task_;
    shown.rounds = privacy_.rounds_allowed();  // an epsilon_budget may end every run early
    monitor_ = std::make_unique<FleetMonitor>(
        agents, DashboardRun(opt_.name, shown, opt_.experiment, opt_.network, names_, described.error_metric));
    for (const RegistryEntry& e : registry_.entries())
      if (e.index < agents) monitor_->provisioned(e.index, e.id);
    auto committed = store_->load_rounds(kNoVectors);
    if (!committed.ok()) return committed.status();
    monitor_->history(*committed);
  }
  if (opt_.experiment.async.async() && !gateways_.empty())
    return Status::Invalid("algorithm.mode = \"async\" does not run through gateways yet (docs/async.md)");
  if (opt_.experiment.devices.present && !opt_.virtual_clock)
    CoordinatorWarn("[devices] describes simulated devices (docs/async.md); the fleet's devices are real and take their own "
                    "time: it is not used here (--virtual-clock uses it with algorithm.mode = \"async\")");
  FleetRoundsOptions fo;
  fo.task = task_;
  fo.initial = protocol::View<double>{instance_->initial_iterate().data(),
                                      static_cast<uint32_t>(instance_->initial_iterate().size())};
  fo.names = names_;
  fo.deadline_ms = static_cast<uint32_t>(opt_.network.deadline_ms);
  fo.quorum = opt_.network.quorum;
  fo.max_update_norm = opt_.experiment.robustness.max_update_norm;
  fo.faults = opt_.faults;
  fo.events = monitor_.get();
  fo.privacy = privacy_.on() ? &privacy_ : nullptr;
  // A device convicted of wrong SecAgg+ shares is revoked like `keys revoke` (refused from its
  // next handshake on, recorded in the state db), after the round that named it is published.
  fo.on_cheater = [this](uint32_t agent, const std::string& why) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    asio::post(io_, [this, r = Revocation{registry_.id_of(agent), now, why}] { revoke(r); });
  };
  fo.gateways = gateways_.empty() ? nullptr : this;
  fo.traffic = &traffic_;
  fo.async = &opt_.experiment.async;
  fo.devices = &opt_.experiment.devices;
  fo.virtual_clock = opt_.virtual_clock;
  auto send = [this](uint32_t agent, const wire::Envelope& env) {
    if (Connection* c = registry_.connection(agent)) c->send(env);
    else if (routed(agent)) relay(agent, env);
  };
  auto stream = [this](uint32_t agent, FleetRounds::Source source) {
    if (Connection* c = registry_.connection(agent)) c->stream(std::move(source));
  };
  auto measure = [this](const protocol::ServerCore& core) {
    monitor_->scored(eval_->test_accuracy(core));
    return eval_->error(core);
  };
  FEDRT_TRY(rounds_.init(fo, store_.get(), send, stream, measure));
  for (const auto& [agent, why] : bad_shards_) {  // once each; the others run on (docs/data.md)
    const std::string reason = "the coordinator's copy of its shard does not read: " + why;
    registry_.set_state(agent, Registry::State::kRefused, reason);
    monitor_->link(agent, FleetMonitor::Link::kRefused, reason);
    rounds_.set_refused(agent, now_ms());
    CoordinatorWarn("refused device={} index={} stage=data reason={} (the run goes on without it)",
                    registry_.id_of(agent), agent, reason);
  }
  if (rounds_.rounds_done() > 0) CoordinatorLog("resume state={} completed_rounds={}", opt_.network.state, rounds_.rounds_done());
  pending_.assign(agents, std::nullopt);
  last_rejection_.assign(agents, std::string());
  repeated_rejections_.assign(agents, 0);
  heartbeats_.assign(agents, 0);
  heard_ms_.assign(agents, 0);
  keys_ = std::make_unique<KeysWatch>(keys);
  auto first = keys_->poll();
  if (!first.ok()) return first.status();
  apply_keys(*first);
  // Devices this run convicted of wrong SecAgg+ shares stay out after a restart (they are
  // in the state db only; the operator's revoked.tsv is the keys folder's).
  auto earlier = store_->load_revocations();
  if (!earlier.ok()) return earlier.status();
  for (const Revocation& r : *earlier)
    if (r.reason.rfind("secagg:", 0) == 0) revoke(r);
  FEDRT_TRY(listen());
  FEDRT_TRY(open_lines());
  return serve_http();
}


Status Coordinator::listen() {
  asio::ip::tcp::endpoint ep(asio::ip::make_address(opt_.network.listen), static_cast<uint16_t>(opt_.network.port));
  std::error_code ec;
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(4096, ec);
  if (ec)
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot listen on {}:{}: {}", opt_.network.listen, opt_.network.port, ec.message()));
  const uint16_t port = acceptor_.local_endpoint().port();
  monitor_->set_address(fmt::format("{}:{}", opt_.network.listen, port));
  if (!opt_.port_file.empty()) {
    const std::string tmp = opt_.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), opt_.port_file.c_str());
  }
  std::string algs;
  for (const auto& n : names_) algs += (algs.empty() ? "" : ",") + n;
  CoordinatorLog("listening address={}:{} agents={} problem={} d={} algorithms={} auth={} deadline_ms={} quorum={}",
                 opt_.network.listen, port, task_.problem.agents, task::ProblemKindName(task_.problem.kind),
                 task_.problem.dim, algs, opt_.network.auth, opt_.network.deadline_ms, opt_.network.quorum);
  const config::DataSettings& data = opt_.experiment.data;
  const bool em = task::FamilyOf(task_.problem.kind) == task::Family::kEm;
  if (task_.problem.own_data)  // which of the devices' data this coordinator holds (docs/data.md)
    CoordinatorLog("data shards={} {}", data.train,
                   data.coordinator_reads_shards
                       ? fmt::format("read_by_coordinator=yes (agents and d from the shards, error = {}){}",
                                     em ? "||h(Shat_k)||^2" : "||x_t - x_star||^2",
                                     bad_shards_.empty() ? ""
                                                         : fmt::format(" loaded={} of {} (x_star and error over the "
                                                                       "shards that loaded)",
                                                                       task_.problem.agents - bad_shards_.size(),
                                                                       task_.problem.agents))
                       : fmt::format("read_by_coordinator=no (coordinator_reads_shards = false: agents and d from the "
                                     "experiment file, no {}, error = nan{})",
                                     em ? "h(Shat_k)" : "x_star", data.test.empty() ? "" : ", test scored on " + data.test));
  else if (!opt_.experiment.opt.coordinator_generates)  // a generated problem's data only on the devices
    CoordinatorLog("data generated_by=devices (problem.coordinator_generates = false: the coordinator holds no "
                   "agent's data, no x_star, error = nan; the final iterates go to model_<algorithm>.npy)");
  return Status::Ok();
}

void Coordinator::on_handshake_failed(Connection& c, int rc) {
  // Reason as mbedTLS reports it, plus the unknown PSK identity if that was it.
  const std::string rejected = tls_.take_rejected_identity(c.ssl());
  // (TLS 1.3 reports an unknown identity as a failed key exchange: the callback saw it.)
  const std::string label = rejected.empty() ? HandshakeFailureLabel(rc) : "unknown_psk_identity";
  monitor_->handshake_failed(label);
  if (!log_refusal("handshake/" + label)) return;
  std::string why = TlsErrorString(rc);
  if (!rejected.empty()) why += fmt::format(" [PSK identity '{}' is not provisioned]", rejected);
  if (rc == MBEDTLS_ERR_SSL_INVALID_RECORD) why += " [not a TLS client hello / plaintext or corrupt record]";
  if (rc == MBEDTLS_ERR_SSL_INVALID_MAC) why += " [record MAC check failed: wrong pre-shared key or tampered record]";
  if (rc == MBEDTLS_ERR_NET_CONN_RESET) why += " [" + c.end_reason() + "]";
  if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) why += " [client certificate not signed by the fleet CA]";
  if (rc == MBEDTLS_ERR_SSL_UNKNOWN_IDENTITY) why += " [unknown PSK identity]";
  if (rc == MBEDTLS_ERR_SSL_HANDSHAKE_FAILURE && rejected.empty())
    why += " [wrong pre-shared key (TLS 1.3 binder), or no suite, group or key exchange in common]";
  CoordinatorWarn("refused peer={} stage=handshake reason={}", c.peer(), why);
}

void Coordinator::on_handshake_done(Connection& c) {
  if (c.identity().empty()) {
    refused("handshake/no_identity", "refused peer={} stage=handshake reason=no authenticated identity", c.peer());
    monitor_->handshake_failed("no_identity");
    c.close("no identity");
    return;
  }
  if (const std::string* why = registry_.revoked(c.identity())) {
    refused("handshake/revoked", "refused device={} peer={} stage=handshake reason=revoked: {}", c.identity(), c.peer(),
            *why);
    monitor_->handshake_failed("revoked");
    c.send_error(wire::ERROR_IDENTITY, fmt::format("device '{}' is revoked: {}", c.identity(), *why), true);
    return;
  }
  CoordinatorDebug("tls peer={} identity={}", c.peer(), c.identity());
}

void Coordinator::on_closed(Connection& c, const std::string& why) {
  tls_.take_rejected_identity(c.ssl());
  if (why == "handshake timeout") monitor_->handshake_failed("timeout");
  if (c.agent() >= 0) {
    const uint32_t agent = static_cast<uint32_t>(c.agent());
    const bool was_ready = registry_.state(agent) == Registry::State::kReady;
    const bool refused = registry_.state(agent) == Registry::State::kRefused;
    if (registry_.detach(agent, &c)) {
      CoordinatorLog("disconnected device={} index={} reason={}", c.identity(), agent, why);
      if (!refused) monitor_->link(agent, FleetMonitor::Link::kDisconnected, why);
      (void)store_->upsert_device(c.identity(), agent, "disconnected");
      if (was_ready) rounds_.set_connected(agent, false, now_ms());
    }
  }
  if (auto g = gateway_of_conn_.find(&c); g != gateway_of_conn_.end()) {
    if (gateways_[g->second].conn == &c) {
      CoordinatorLog("disconnected gateway={} reason={}", gateways_[g->second].id, why);
      gateway_down(g->second, why);
    }
    gateway_of_conn_.erase(g);
  }
  handshaking_.erase(c.serial());
  if (auto it = conns_.find(&c); it != conns_.end()) {
    auto keep = it->second;  // alive until the current handler returns
    conns_.erase(it);
    asio::post(io_, [keep] {});
  }
  after_event();
}

void Coordinator::on_frame(Connection& c, const std::string& body) {
  wire::Envelope env;
  wire::WireError err;
  if (c.agent() >= 0) monitor_->seen(static_cast<uint32_t>(c.agent()));
  if (!wire::ParseEnvelope(body, env, err)) {
    refused(std::string("rejected/") + wire::ErrorReasonName(err.reason),
            "rejected device={} peer={} reason={}: {} (connection closed)", c.identity(), c.peer(),
            wire::ErrorReasonName(err.reason), err.message);
    monitor_->frame_rejected(wire::ErrorReasonName(err.reason));
    c.send_error(err.reason, err.message, true);
    return;
  }
  if (c.agent() >= 0) heard_ms_[static_cast<size_t>(c.agent())] = now_ms();
  if (!env.gateway().empty()) {
    on_gateway_frame(c, env);
    after_event();
    return;
  }
  if (gateway_of_conn_.count(&c) != 0) {
    refused("rejected/gateway_link", "rejected gateway={} peer={} reason=malformed: a device's message on a gateway "
            "link (connection closed)", c.identity(), c.peer());
    c.send_error(wire::ERROR_MALFORMED, "a gateway sends gateway-link messages only", true);
    return;
  }
  if (c.state() == Connection::State::kRegistered && env.body_case() == wire::Envelope::kHeartbeat) {
    if (!c.charge()) flooded(c, "heartbeats");
    return;
  }
  if (c.state() == Connection::State::kAwaitHello) {
    if (env.body_case() != wire::Envelope::kHello) {
      refused("rejected/not_registered",
              "rejected device={} peer={} reason=not_registered: first message must be hello (connection closed)",
              c.identity(), c.peer());
      monitor_->frame_rejected("not_registered");
      c.send_error(wire::ERROR_NOT_REGISTERED, "first message must be hello", true);
      return;
    }
    on_hello(c, env.hello());
  } else if (env.body_case() == wire::Envelope::kTaskReply) {
    on_task_reply(c, env.task_reply());
  } else {
    on_round_message(c, env);
  }
  after_event();
}

void Coordinator::on_hello(Connection& c, const wire::Hello& h) {
  wire::WireError err;
  if (!wire::ValidateHello(h, err)) {
    refused(std::string("registration/") + wire::ErrorReasonName(err.reason),
            "refused device={} peer={} stage=registration reason={}: {}", c.identity(), c.peer(),
            wire::ErrorReasonName(err.reason), err.message);
    monitor_->handshake_failed(wire::ErrorReasonName(err.reason));
    c.send_error(err.reason, err.message, true);
    return;
  }
  if (h.device_id() != c.identity()) {
    const std::string m = fmt::format("device id '{}' does not match the TLS identity '{}'", h.device_id(), c.identity());
    refused("registration/identity", "refused peer={} stage=registration reason=identity: {}", c.peer(), m);
    monitor_->handshake_failed("identity");
    c.send_error(wire::ERROR_IDENTITY, m, true);
    return;
  }
  const auto idx = registry_.index_of(h.device_id());
  if (!idx) {
    const std::string m = fmt::format("device '{}' is not in the registry of this experiment", h.device_id());
    refused("registration/identity", "refused peer={} stage=registration reason=identity: {}", c.peer(), m);
    monitor_->handshake_failed("identity");
    c.send_error(wire::ERROR_IDENTITY, m, true);
    return;
  }
  const uint64_t want = task::ProblemFingerprint(task_.problem);
  if (h.provisioned_problem() != 0 && h.provisioned_problem() != want) {
    const std::string m = fmt::format("the device holds data of problem {:016x}, this experiment's is {:016x}",
                                      h.provisioned_problem(), want);
    refused("registration/config_mismatch", "refused device={} stage=registration reason=config_mismatch: {}",
            h.device_id(), m);
    monitor_->handshake_failed("config_mismatch");
    c.send_error(wire::ERROR_CONFIG_MISMATCH, m, true);
    return;
  }
  const uint32_t agent = *idx;
  if (auto bad = bad_shards_.find(agent); bad != bad_shards_.end()) {  // logged once, at the start
    refused("registration/bad_shard", "refused device={} peer={} stage=registration reason=bad shard at the coordinator",
            h.device_id(), c.peer());
    c.send_error(wire::ERROR_CONFIG_MISMATCH,
                 fmt::format("the coordinator's copy of this device's shard does not read ({}): the run goes on "
                             "without this device",
                             bad->second),
                 true);
    return;
  }
  if (Connection* old = registry_.attach(agent, &c)) {
    CoordinatorWarn("superseded device={} old_peer={} new_peer={}", h.device_id(), old->peer(), c.peer());
    if (registry_.state(agent) == Registry::State::kReady) rounds_.set_connected(agent, false, now_ms());
    old->close("superseded by a new connection");  // no longer the agent's: on_closed leaves the agent alone
  }
  c.set_registered(static_cast<int>(agent));
  handshaking_.erase(c.serial());
  rounds_.set_chunk_limit(agent, std::min(h.max_chunk_bytes() == 0 ? task::kChunkBytes : h.max_chunk_bytes(),
                                          task::kChunkBytes));
  registry_.set_state(agent, Registry::State::kAwaitingReply);
  monitor_->link(agent, FleetMonitor::Link::kRegistering, "", c.peer());
  monitor_->platform(agent, h.platform().empty() ? std::string("unknown") : h.platform());
  monitor_->via(agent, "");
  pending_[agent].reset();
  heartbeats_[agent] = h.heartbeats() ? 1 : 0;
  heard_ms_[agent] = now_ms();
  if (h.has_pending()) pending_[agent] = protocol::RoundId{h.pending_algorithm(), h.pending_run(), h.pending_round()};
  if (const std::string lag = pending_[agent] && !opt_.accept_rollback ? rounds_.behind(*pending_[agent]) : "";
      !lag.empty())
    return stop_behind(h.device_id(), lag);
  (void)store_->upsert_device(h.device_id(), agent, "registered");
  CoordinatorLog("registered device={} index={} peer={} pending={}", h.device_id(), agent, c.peer(),
                 h.has_pending() ? fmt::format("alg:{} run:{} round:{}", h.pending_algorithm(), h.pending_run(),
                                               h.pending_round())
                                 : std::string("none"));
  wire::Envelope env;
  wire::Welcome* w = env.mutable_welcome();
  w->set_protocol_version(wire::kProtocolVersion);
  w->set_device_index(agent);
  w->set_num_devices(task_.problem.agents);
  wire::EncodeTask(task_, w->mutable_task());
  if (h.heartbeats() && opt_.network.idle_timeout_ms > 0)
    w->set_heartbeat_ms(static_cast<uint32_t>(heartbeat_ms()));
  c.send(env);
}

// Round 0 starts when every agent answered the task, or at the start timeout.
void Coordinator::maybe_start(bool timeout) {
  if (rounds_.started() || finished_) return;
  const uint32_t agents = task_.problem.agents;
  const uint32_t ready = registry_.count(Registry::State::kReady);
  const uint32_t refused = registry_.count(Registry::State::kRefused);
  if (!timeout && ready + refused < agents) return;
  start_timer_.cancel();
  CoordinatorLog("start devices={} of {} refused={}{}", ready, agents, refused, timeout ? " (start timeout)" : "");
  rounds_.start(now_ms());
  after_event();
}

// After every event: re-arm the round's deadline, and end the run when the schedule is done.
void Coordinator::after_event() {
  if (finished_) return;
  if (!rounds_.fatal().ok()) {
    fatal_ = rounds_.fatal();
    monitor_->set_status("failed");
    finished_ = true;
    io_.stop();
    return;
  }
  if (rounds_.stopped()) {
    finished_ = true;
    io_.stop();
    return;
  }
  if (rounds_.finished()) {
    Status st = finish();
    if (!st.ok()) {  // the outputs could not be written: end the run with the reason, do not wait on
      fatal_ = st;
      CoordinatorError("fatal {}", st.message());
      io_.stop();
    }
    return;
  }
  arm_deadline();
}

void Coordinator::arm_deadline() {
  const uint64_t at = rounds_.next_deadline_ms();
  if (at == armed_for_) return;
  armed_for_ = at;
  deadline_.cancel();
  if (at == protocol::ServerSession::kNoDeadline) return;
  deadline_.expires_at(t0_ + std::chrono::milliseconds(at));
  deadline_.async_wait([this, at](const std::error_code& ec) {
    if (ec || at != armed_for_) return;
    armed_for_ = protocol::ServerSession::kNoDeadline;
    rounds_.tick(std::max(at, now_ms()));
    after_event();
  });
}

Status Coordinator::finish() {
  finished_ = true;
  refusals_.flush(std::chrono::steady_clock::now(), true);
  monitor_->set_status("finished");
  keys_timer_.cancel();
  idle_timer_.cancel();
  deadline_.cancel();
  start_timer_.cancel();
  CoordinatorLog("finished rounds={} writing outputs to {}", rounds_.rounds_done(), opt_.out);
  if (!opt_.out.empty()) {
    report::SimResult res;
    res.config = opt_.experiment;
    res.config.plot = opt_.plot;
    eval_->describe(res);
    res.settings["driver"] = "fedrt-coordinator";
    res.settings["deadline_ms"] = opt_.network.deadline_ms;
    res.settings["quorum"] = opt_.network.quorum;
    res.settings["auth"] = opt_.network.auth;
    res.problem.description += fmt::format(", {} agents over TLS", task_.problem.agents);
    rounds_.release_session();  // FleetResult replays each run in a session of its own
    FEDRT_TRY(FleetResult(AccountedTask(), *instance_, *eval_, *store_, res, &opt_.experiment.privacy));
    Status plot = Status::Ok();
    FEDRT_TRY(report::WriteOutputs(res, opt_.out, opt_.plot ? &plot : nullptr));
    std::vector<std::string> ids;
    for (uint32_t a = 0; a < task_.problem.agents; ++a) ids.push_back(registry_.id_of(a));
    FEDRT_TRY(WriteDeviceReports(task_, names_, ids, *store_, opt_.out + "/devices.csv"));
    if (!plot.ok()) CoordinatorWarn("warning plot={}", plot.message());
  }
  wire::Envelope env;
  env.mutable_shutdown()->set_reason("experiment complete");
  // A send that fails closes its connection, and on_closed erases it from conns_: iterate a copy.
  std::vector<std::shared_ptr<Connection>> registered;
  for (const auto& [p, c] : conns_)
    if (c->state() == Connection::State::kRegistered) registered.push_back(c);
  for (const auto& c : registered) c->send(env);
  std::error_code ec;
  acceptor_.close(ec);
  accept_retry_.cancel();
  for (const auto& line : lines_) line->stop();
  // Let the shutdown messages drain, then stop.
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(300));
  t->async_wait([this, t](const std::error_code&) { io_.stop(); });
  return Status::Ok();
}

Status Coordinator::run() {
  set_limits();
  accept();
  for (const auto& line : lines_) line->start();
  watch_keys();
  watch_idle();
  if (rounds_.complete()) {  // a finished experiment's state: write the outputs again
    asio::post(io_, [this] { maybe_start(true); });
  } else if (opt_.network.start_timeout_ms > 0) {
    start_timer_.expires_after(std::chrono::milliseconds(opt_.network.start_timeout_ms));
    start_timer_.async_wait([this](const std::error_code& ec) {
      if (!ec) maybe_start(true);
    });
  } else {
    asio::post(io_, [this] { maybe_start(true); });
  }
  io_.run();
  linger();
  return fatal_;
}

// --http-linger: the finished run's dashboard stays up (its threads serve
// it; the event loop has stopped) until the time is up or Ctrl-C.
void Coordinator::linger() {
  if (http_ == nullptr || opt_.network.http_linger_s <= 0 || !finished_) return;
  CoordinatorLog("dashboard stays up for {} s after the run (Ctrl-C ends it)", opt_.network.http_linger_s);
  std::signal(SIGINT, SIG_DFL);  // the outputs are written: a plain interrupt may end the process
  std::signal(SIGTERM, SIG_DFL);
  std::this_thread::sleep_for(std::chrono::seconds(opt_.network.http_linger_s));
}

}  // namespace fedrt::net::detail

namespace fedrt::net {

Status RunCoordinator(const CoordinatorOptions& options) {
  detail::Coordinator co(options);
  FEDRT_TRY(co.init());
  return co.run();
}

}  // namespace fedrt::net
