// fedrt-gateway's link to the coordinator (gateway/gateway.h): one TLS
// client session, with its own identity, over the coordinator's own
// connection code; the addresses of --coordinator tried in turn with backoff
// (100 ms doubling to 3 s) whenever the link fails; and what comes down it:
// the task, each round's basis and verdict, relayed SecAgg+ messages.
#include <fmt/format.h>

#include "fedrt/log/log.h"
#include "fedrt/task/limits.h"
#include "fedrt/wire/gateway_codec.h"
#include "gateway_impl.h"

namespace fedrt::net::detail {

void Gateway::send_up(const wire::GatewayEnvelope& ge) {
  if (up_ == nullptr) return;
  wire::Envelope env;
  wire::Wrap(ge, env);
  up_->send(env);
}

void Gateway::connect_upstream() {
  if (finished_ || opt_.coordinators.empty()) return;
  const std::string address = opt_.coordinators[next_address_ % opt_.coordinators.size()];
  ++next_address_;
  const size_t colon = address.rfind(':');
  asio::ip::tcp::resolver resolver(io_);
  std::error_code ec;
  auto endpoints = resolver.resolve(address.substr(0, colon), address.substr(colon + 1), ec);
  if (ec) return retry_upstream(fmt::format("{}: {}", address, ec.message()));
  asio::ip::tcp::socket sock(io_);
  asio::connect(sock, endpoints, ec);  // loopback or a LAN: a short blocking connect
  if (ec) return retry_upstream(fmt::format("{}: {}", address, ec.message()));
  up_ = std::make_shared<Connection>(this, std::make_unique<TcpTransport>(std::move(sock)), next_serial_++);
  Status st = up_->start(up_tls_.conf());
  if (!st.ok()) {
    up_.reset();
    return retry_upstream(std::string(st.message()));
  }
  Log().info("upstream connecting to {}", address);
  up_->pump();
}

void Gateway::retry_upstream(const std::string& why) {
  if (up_ != nullptr) {
    auto c = up_;
    c->close(why);  // on_closed comes back here with up_ reset
    return;
  }
  if (finished_) return;
  const long delay = std::min<long>(3000, 100L << std::min(failures_, 5));
  ++failures_;
  Log().warn("upstream lost reason={} retry_in_ms={}", why, delay);
  retry_timer_.expires_after(std::chrono::milliseconds(delay));
  retry_timer_.async_wait([this](const std::error_code& ec) {
    if (!ec) connect_upstream();
  });
}

void Gateway::on_upstream_frame(const wire::Envelope& env) {
  if (env.body_case() == wire::Envelope::kShutdown) return shutdown(env.shutdown().reason());
  if (env.body_case() == wire::Envelope::kError) {
    Log().warn("coordinator error reason={}: {}", wire::ErrorReasonName(env.error().reason()), env.error().message());
    return;
  }
  wire::GatewayEnvelope ge;
  std::string why;
  if (!wire::Unwrap(env, ge, why)) return retry_upstream("from the coordinator: " + why);
  switch (ge.body_case()) {
    case wire::GatewayEnvelope::kWelcome: return on_welcome(ge.welcome());
    case wire::GatewayEnvelope::kRound: return on_round(ge.round());
    case wire::GatewayEnvelope::kResult: return on_result(ge.result());
    case wire::GatewayEnvelope::kRelayed: return on_relayed(ge.relayed());
    case wire::GatewayEnvelope::kMaskedExpect: {
      const wire::MaskedExpect& m = ge.masked_expect();
      if (!secure_ || protocol::RoundId{m.algorithm_index(), m.run(), m.round()} != secure_id_) return;
      std::vector<uint32_t> agents;
      for (uint32_t a : m.agents())
        if (devices_.count(a) != 0 && devices_[a].conn != nullptr) agents.push_back(a);
      summer_.expect(agents);
      if (summer_.ready()) hand_up();
      return;
    }
    case wire::GatewayEnvelope::kShutdown: return shutdown(ge.shutdown().reason());
    case wire::GatewayEnvelope::kDeviceKey: {  // keys rotate at the coordinator: the old PSK is refused from now on
      const wire::DeviceKey& k = ge.device_key();
      auto it = index_.find(k.device_id());
      if (it == index_.end() || k.psk().size() < 16 || k.psk().size() > 64) return;
      tls_.add_psk(k.device_id(), SecretBytes(k.psk().begin(), k.psk().end()));
      Device& d = devices_[it->second];
      Log().warn("rotated device={} index={} (its old PSK is refused from now on)", d.id, it->second);
      if (d.conn != nullptr) d.conn->close("keys rotated");
      return;
    }
    default: Log().warn("ignored gateway-link message {} from the coordinator", static_cast<int>(ge.body_case()));
  }
}

void Gateway::on_welcome(const wire::GatewayWelcome& w) {
  task::Task t;
  Status st = wire::DecodeTask(w.task(), t);
  if (!st.ok()) return retry_upstream(fmt::format("the coordinator's task does not decode: {}", st.message()));
  if (have_task_ && !(t.problem.agents == task_.problem.agents && task::ProblemFingerprint(t.problem) ==
                                                                       task::ProblemFingerprint(task_.problem))) {
    fatal_ = Status(StatusCode::kFailedPrecondition, "the coordinator now runs another experiment than this gateway's devices hold");
    return shutdown(std::string(fatal_.message()));
  }
  for (int i = 0; i < w.device_ids_size() && i < w.device_psks_size(); ++i)  // the coordinator's keys are the current ones
    if (!w.device_psks(i).empty() && index_.count(w.device_ids(i)) != 0)
      tls_.add_psk(w.device_ids(i), SecretBytes(w.device_psks(i).begin(), w.device_psks(i).end()));
  task_ = t;
  have_task_ = true;
  heartbeat_ms_ = w.heartbeat_ms();
  welcomed_ = true;
  failures_ = 0;
  Log().info("welcomed agents={} devices_here={}", task_.problem.agents, w.agents_size());
  for (auto& [agent, d] : devices_)  // devices that stayed connected while the link was down
    if (d.ready && d.conn != nullptr) device_up(agent, true, "");
}

void Gateway::on_round(const wire::GatewayRound& r) {
  protocol::RoundBasis b;
  if (Status st = wire::Decode(r, b); !st.ok()) return retry_upstream(std::string(st.message()));
  if (b.id.algorithm >= task_.num_algorithms || b.id.run >= task_.runs) return retry_upstream("a round of no algorithm");
  for (auto& [agent, d] : devices_) d.bytes_down = d.bytes_up = 0;  // a new round's traffic
  secure_ = b.secure;
  if (secure_) {  // the session announces (the same SecAgg+ ids); the phases are relayed, masked inputs summed
    secure_id_ = b.id;
    summer_.begin(b.id);
  }
  if (session_ == nullptr || session_alg_ != b.id.algorithm || session_run_ != b.id.run) {
    auto s = std::make_unique<protocol::ServerSession>();
    protocol::ServerOptions so;
    so.task = task_;
    so.algorithm = b.id.algorithm;
    so.run = b.id.run;
    so.partial = true;
    // The gateway's state comes from the coordinator every round: the initial iterate only sizes it.
    const std::vector<double> initial(task_.problem.dim, 0.0);
    so.initial = protocol::View<double>{initial.data(), static_cast<uint32_t>(initial.size())};
    if (Status st = s->init(so); !st.ok()) return retry_upstream(fmt::format("partial session: {}", st.message()));
    session_ = std::move(s);
    session_alg_ = b.id.algorithm;
    session_run_ = b.id.run;
  }
  // The round waits for the sampled devices that are up here now (one provisioned here may be at the
  // coordinator itself, or behind another address of its list); one that comes up during the round is
  // announced and may still answer until the partial goes up.
  for (uint32_t c = 0; c < task_.problem.agents; ++c) {
    auto it = devices_.find(c);
    const bool up = it != devices_.end() && it->second.ready && it->second.conn != nullptr;
    session_->set_served(c, up);
    session_->set_connected(c, up, now_ms());
  }
  if (Status st = session_->open_from(b, now_ms()); !st.ok())
    return retry_upstream(fmt::format("round {}: {}", b.id.round, st.message()));
  handed_up_ = secure_;  // a secure round hands up its masked sum (summer_), not a partial
  deliver();
}

void Gateway::on_result(const wire::GatewayResult& r) {
  protocol::RoundVerdict v;
  if (Status st = wire::Decode(r, v); !st.ok()) return retry_upstream(std::string(st.message()));
  for (auto& [agent, d] : devices_)
    if (d.pending && *d.pending == v.id) d.pending.reset();
  if (session_ == nullptr || session_->current() != v.id) return;
  handed_up_ = true;  // what was not handed up is dropped with the round
  session_->settle(v.included, protocol::View<double>{v.model.data(), static_cast<uint32_t>(v.model.size())});
  session_->publish();
  deliver();
}

void Gateway::on_relayed(const wire::Relayed& r) {
  auto it = devices_.find(r.agent());
  if (it == devices_.end() || it->second.conn == nullptr) return;
  wire::Envelope env;
  if (!env.ParseFromString(r.envelope())) return;
  if (env.body_case() == wire::Envelope::kError && env.error().reason() == wire::ERROR_IDENTITY) {
    it->second.revoked = true;  // revoked at the coordinator: refused here from now on
    Log().warn("revoked device={} index={} reason={}", it->second.id, r.agent(), env.error().message());
    it->second.conn->send_error(wire::ERROR_IDENTITY, env.error().message(), true);
    return;
  }
  it->second.conn->send(env);
}

void Gateway::shutdown(const std::string& why) {
  if (finished_) return;
  finished_ = true;
  Log().info("shutdown reason={}", why);
  wire::Envelope env;
  env.mutable_shutdown()->set_reason(why.substr(0, task::kMaxReasonChars));
  for (auto& [agent, d] : devices_)
    if (d.conn != nullptr) d.conn->send(env);
  std::error_code ec;
  acceptor_.close(ec);
  for (const auto& line : lines_) line->stop();
  retry_timer_.cancel();
  accept_retry_.cancel();
  deadline_.cancel();
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(300));
  t->async_wait([this, t](const std::error_code&) { io_.stop(); });
}

}  // namespace fedrt::net::detail
