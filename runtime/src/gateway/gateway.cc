// fedrt-gateway's side of its devices (gateway/gateway.h): the coordinator's
// accept path, TLS and per-connection bounds (coordinator/connection.h),
// registration against its own registry and the task the coordinator sent,
// and each round run by a partial server session over its devices.
#include <sys/resource.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "fedrt/coordinator/broadcast_stream.h"
#include "fedrt/log/log.h"
#include "fedrt/task/fingerprint.h"
#include "fedrt/wire/gateway_codec.h"
#include "gateway_impl.h"

namespace fedrt::net::detail {

namespace {
// Descriptors kept for the link up, the log and the keys folder.
constexpr rlim_t kReservedFiles = 64;
}  // namespace

Status Gateway::init() {
  auto registry = LoadRegistry(opt_.keys + "/registry.tsv");
  if (!registry.ok()) return registry.status();
  for (const RegistryEntry& e : *registry) {
    index_[e.id] = e.index;
    devices_[e.index].id = e.id;
  }
  // One socket per device: the soft open-file limit goes up to the hard one, as
  // the coordinator's does (docs/scale.md), and a fleet beyond it is told now.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    if (nofile.rlim_cur < nofile.rlim_max) {
      rlimit want = nofile;
      want.rlim_cur = nofile.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &want) == 0) nofile = want;
    }
    if (nofile.rlim_cur != RLIM_INFINITY && registry->size() + kReservedFiles > nofile.rlim_cur)
      Log().warn("open-file limit {} is below its {} devices and {} reserved: devices beyond it are not accepted",
                 static_cast<unsigned long>(nofile.rlim_cur), registry->size(), kReservedFiles);
  }
  // PSK devices always; certificate devices when the folder holds the fleet's CA and a server certificate.
  const std::string ca = opt_.keys + "/ca.crt", crt = opt_.keys + "/gateway.crt", key = opt_.keys + "/gateway.key";
  std::error_code fs_ec;
  const bool certs =
      std::filesystem::exists(ca, fs_ec) && std::filesystem::exists(crt, fs_ec) && std::filesystem::exists(key, fs_ec);
  FEDRT_TRY(tls_.init(ca, crt, key, *registry, certs ? "any" : "psk"));
  TlsClientCredentials up;
  up.identity = opt_.id;
  up.psk_file = opt_.keys + "/gateway.psk";
  FEDRT_TRY(up_tls_.init(up));
  asio::ip::tcp::endpoint ep;
  try {
    ep = asio::ip::tcp::endpoint(asio::ip::make_address(opt_.listen), static_cast<uint16_t>(opt_.port));
  } catch (const std::exception&) {
    return Status(StatusCode::kInvalidArgument, fmt::format("--listen '{}' is not an IP address", opt_.listen));
  }
  std::error_code ec;
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(1024, ec);
  if (ec)
    return Status(StatusCode::kUnavailable, fmt::format("cannot listen on {}:{}: {}", opt_.listen, opt_.port, ec.message()));
  for (const std::string& value : opt_.serial) {
    auto spec = ParseSerialLine(value);
    if (!spec.ok()) return spec.status();
    auto line = std::make_shared<SerialLine>(this, *spec, [this](std::unique_ptr<Transport> t) {
      if (finished_) return t->close();
      admit(std::move(t));
    });
    FEDRT_TRY(line->open());
    lines_.push_back(std::move(line));
  }
  const uint16_t port = acceptor_.local_endpoint().port();
  if (!opt_.port_file.empty()) {
    const std::string tmp = opt_.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), opt_.port_file.c_str());
  }
  Log().info("gateway {} listening address={}:{} devices={} serial_lines={} coordinators={}", opt_.id, opt_.listen, port,
             devices_.size(), lines_.size(), fmt::join(opt_.coordinators, ","));
  return Status::Ok();
}

Status Gateway::run() {
  accept();
  for (const auto& line : lines_) line->start();
  connect_upstream();
  io_.run();
  return fatal_;
}

void Gateway::accept() {
  acceptor_.async_accept([this](const std::error_code& ec, asio::ip::tcp::socket sock) {
    if (finished_ || ec == asio::error::operation_aborted) return;
    if (ec) {  // e.g. out of descriptors: retry shortly rather than spin on the error (as the coordinator)
      if (++accept_errors_ <= 10) Log().warn("accept error={}", ec.message());
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](const std::error_code& e) {
        if (!e && !finished_ && acceptor_.is_open()) accept();
      });
      return;
    }
    admit(std::make_unique<TcpTransport>(std::move(sock)));
    if (acceptor_.is_open()) accept();
  });
}

// A device's session: an accepted socket or one beginning on a serial line.
void Gateway::admit(std::unique_ptr<Transport> t) {
  auto c = std::make_shared<Connection>(this, std::move(t), next_serial_++);
  c->set_limits({static_cast<size_t>(opt_.max_output_bytes), static_cast<double>(opt_.device_messages_per_s),
                 static_cast<double>(opt_.device_message_burst)});
  if (!c->start(tls_.conf()).ok()) return;
  conns_.emplace(c.get(), c);
  c->pump();
}

void Gateway::on_handshake_done(Connection& c) {
  if (&c == up_.get()) {  // the coordinator: this gateway introduces itself
    c.set_registered(-1);
    wire::GatewayEnvelope ge;
    ge.mutable_hello()->set_protocol_version(wire::kProtocolVersion);
    ge.mutable_hello()->set_gateway_id(opt_.id);
    send_up(ge);
    Log().info("upstream connected tls={}", mbedtls_ssl_get_version(c.ssl()));
    return;
  }
  auto it = index_.find(c.identity());
  if (it == index_.end() || devices_[it->second].revoked) {
    if (log_refusal("handshake/identity"))
      Log().warn("refused peer={} stage=handshake reason={}", c.peer(),
                 it == index_.end() ? "no device identity of this gateway" : "revoked");
    c.send_error(wire::ERROR_IDENTITY, "this device is not served here", true);
  }
}

void Gateway::on_handshake_failed(Connection& c, int rc) {
  if (&c == up_.get()) return;  // on_closed retries
  if (log_refusal("handshake/" + std::to_string(rc)))
    Log().warn("refused peer={} stage=handshake reason={}", c.peer(), TlsErrorString(rc));
}

void Gateway::on_closed(Connection& c, const std::string& why) {
  if (&c == up_.get()) {
    auto keep = up_;
    up_.reset();
    welcomed_ = false;
    asio::post(io_, [keep] {});
    if (!finished_) retry_upstream(why);
    return;
  }
  if (c.agent() >= 0) {
    const uint32_t agent = static_cast<uint32_t>(c.agent());
    Device& d = devices_[agent];
    if (d.conn == &c) {
      d.conn = nullptr;
      const bool was_ready = d.ready;
      d.ready = false;
      if (session_ != nullptr) session_->set_connected(agent, false, now_ms());
      summer_.drop(agent);
      Log().info("disconnected device={} index={} reason={}", d.id, agent, why);
      if (was_ready && welcomed_) {
        wire::GatewayEnvelope ge;
        ge.mutable_device_down()->set_agent(agent);
        ge.mutable_device_down()->set_reason(why.substr(0, 128));
        send_up(ge);
      }
      if (secure_ && summer_.ready()) hand_up();  // the one it waited for left
    }
  }
  if (auto it = conns_.find(&c); it != conns_.end()) {
    auto keep = it->second;
    conns_.erase(it);
    asio::post(io_, [keep] {});
  }
}

void Gateway::on_frame(Connection& c, const std::string& body) {
  wire::Envelope env;
  wire::WireError err;
  if (!wire::ParseEnvelope(body, env, err)) {
    if (&c == up_.get()) return retry_upstream("undecodable frame from the coordinator: " + err.message);
    c.send_error(err.reason, err.message, true);
    return;
  }
  if (&c == up_.get()) return on_upstream_frame(env);
  if (!env.gateway().empty()) {
    c.send_error(wire::ERROR_MALFORMED, "gateway-link messages come from gateways only", true);
    return;
  }
  if (c.state() == Connection::State::kRegistered && env.body_case() == wire::Envelope::kHeartbeat) {
    (void)c.charge();
    return;
  }
  if (c.state() == Connection::State::kAwaitHello) {
    if (env.body_case() != wire::Envelope::kHello)
      return c.send_error(wire::ERROR_NOT_REGISTERED, "first message must be hello", true);
    return on_hello(c, env.hello());
  }
  if (env.body_case() == wire::Envelope::kTaskReply) return on_task_reply(c, env.task_reply());
  on_round_message(c, env);
}

void Gateway::on_hello(Connection& c, const wire::Hello& h) {
  wire::WireError err;
  if (!wire::ValidateHello(h, err)) return c.send_error(err.reason, err.message, true);
  if (h.device_id() != c.identity())
    return c.send_error(wire::ERROR_IDENTITY,
                        fmt::format("device id '{}' does not match the TLS identity '{}'", h.device_id(), c.identity()),
                        true);
  if (!have_task_ || !welcomed_)
    return c.send_error(wire::ERROR_UNSPECIFIED, "the gateway is not connected to its coordinator yet: try again", true);
  const uint32_t agent = index_.at(h.device_id());
  if (agent >= task_.problem.agents)
    return c.send_error(wire::ERROR_IDENTITY, fmt::format("device '{}' is not an agent of this run", h.device_id()), true);
  const uint64_t want = task::ProblemFingerprint(task_.problem);
  if (h.provisioned_problem() != 0 && h.provisioned_problem() != want)
    return c.send_error(wire::ERROR_CONFIG_MISMATCH,
                        fmt::format("the device holds data of problem {:016x}, this experiment's is {:016x}",
                                    h.provisioned_problem(), want),
                        true);
  Device& d = devices_[agent];
  if (d.conn != nullptr && d.conn != &c) {
    Log().warn("superseded device={} old_peer={} new_peer={}", d.id, d.conn->peer(), c.peer());
    Connection* old = d.conn;
    d.conn = nullptr;
    if (session_ != nullptr) session_->set_connected(agent, false, now_ms());
    old->close("superseded by a new connection");
  }
  d.conn = &c;
  d.ready = false;
  d.platform = h.platform();
  d.chunk_limit = std::min(h.max_chunk_bytes() == 0 ? task::kChunkBytes : h.max_chunk_bytes(), task::kChunkBytes);
  d.pending.reset();
  if (h.has_pending()) d.pending = protocol::RoundId{h.pending_algorithm(), h.pending_run(), h.pending_round()};
  c.set_registered(static_cast<int>(agent));
  Log().info("registered device={} index={} peer={}", d.id, agent, c.peer());
  wire::Envelope env;
  wire::Welcome* w = env.mutable_welcome();
  w->set_protocol_version(wire::kProtocolVersion);
  w->set_device_index(agent);
  w->set_num_devices(task_.problem.agents);
  wire::EncodeTask(task_, w->mutable_task());
  if (h.heartbeats() && heartbeat_ms_ > 0) w->set_heartbeat_ms(heartbeat_ms_);
  c.send(env);
}

void Gateway::on_task_reply(Connection& c, const wire::TaskReply& r) {
  const uint32_t agent = static_cast<uint32_t>(c.agent());
  Device& d = devices_[agent];
  if (d.ready) return c.send_error(wire::ERROR_MALFORMED, "a TaskReply answers Welcome once", false);
  d.ready = r.accepted();
  Log().info("{} device={} index={} tls={}", r.accepted() ? "ready" : "refused", d.id, agent, c.tls_session());
  device_up(agent, r.accepted(), r.reason().substr(0, task::kMaxReasonChars));
  if (d.ready && session_ != nullptr) {
    session_->set_connected(agent, true, now_ms());  // during a round: announced if it owes it
    deliver();
  }
}

void Gateway::device_up(uint32_t agent, bool accepted, const std::string& refusal) {
  const Device& d = devices_[agent];
  if (!welcomed_ || d.conn == nullptr) return;
  wire::GatewayEnvelope ge;
  wire::DeviceUp* u = ge.mutable_device_up();
  u->set_agent(agent);
  u->set_platform(d.platform.empty() ? "unknown" : d.platform);
  u->set_accepted(accepted);
  u->set_refusal(refusal);
  u->set_peer(d.conn->peer());
  u->set_tls(d.conn->tls_session());
  if (d.pending) {
    u->set_has_pending(true);
    u->set_pending_algorithm(d.pending->algorithm);
    u->set_pending_run(d.pending->run);
    u->set_pending_round(d.pending->round);
  }
  send_up(ge);
}

void Gateway::send_device(uint32_t agent, const wire::Envelope& env) {
  auto it = devices_.find(agent);
  if (it != devices_.end() && it->second.conn != nullptr) it->second.conn->send(env);
}

void Gateway::on_round_message(Connection& c, const wire::Envelope& env) {
  const uint32_t agent = static_cast<uint32_t>(c.agent());
  if (!devices_[agent].ready)
    return c.send_error(wire::ERROR_NOT_REGISTERED, "answer the task (TaskReply) before taking part in rounds", false);
  wire::WireError err;
  if (!inbound_.decode(env, err)) return c.send_error(err.reason, err.message, false);
  const protocol::MessageKind k = inbound_.kind();
  if (k == protocol::MessageKind::kUpdate || k == protocol::MessageKind::kChunk ||
      k == protocol::MessageKind::kSecAggMasked)
    devices_[agent].bytes_up += env.ByteSizeLong() + 4;  // a frame: its length prefix too (relayed ones count upstream)
  if (k == protocol::MessageKind::kUpdate || k == protocol::MessageKind::kChunk) {
    if (session_ == nullptr || secure_) return c.send_error(wire::ERROR_FUTURE_ROUND, "no plain round is open", false);
    const protocol::Verdict v = session_->on_message(agent, inbound_.from_device(), now_ms());
    if (!v.ok()) {
      if (log_refusal("rejected/" + devices_[agent].id)) Log().warn("rejected device={} reason={}", devices_[agent].id, v.why);
      c.send_error(wire::ErrorReasonOf(v.refusal), v.why, false);
    } else if (v.whole) {
      const protocol::RoundId id = k == protocol::MessageKind::kUpdate ? inbound_.update().id : inbound_.chunk().id;
      devices_[agent].pending = id;  // until its verdict: told to a coordinator that restarts (device_up)
      wire::Envelope ack;
      ack.mutable_ack()->set_algorithm_index(id.algorithm);
      ack.mutable_ack()->set_run(id.run);
      ack.mutable_ack()->set_round(id.round);
      c.send(ack);
    }
    deliver();
    return;
  }
  if (k == protocol::MessageKind::kSecAggMasked) {
    const protocol::Verdict v = summer_.add(agent, inbound_.masked());
    if (!v.ok()) return c.send_error(wire::ERROR_MALFORMED, v.why, false);
    if (summer_.ready()) hand_up();
    return;
  }
  if (!welcomed_) return;  // the coordinator is away: the phase's deadline takes care of it
  wire::GatewayEnvelope ge;  // any other SecAgg+ message goes up as it is
  ge.mutable_relayed()->set_agent(agent);
  env.SerializeToString(ge.mutable_relayed()->mutable_envelope());
  send_up(ge);
}

// The partial session's messages: announcements (chunked when longer than a
// device's chunk), round results; its partial up once the round is complete.
void Gateway::deliver() {
  if (session_ == nullptr) return;
  protocol::Outgoing out;
  while (session_->next_outgoing(out)) {
    if (out.kind == protocol::MessageKind::kAnnouncement) {
      announce(out.agent);
      continue;
    }
    wire::Envelope env;
    if (wire::Encode(session_->message(out, now_ms()), env)) send_device(out.agent, env);
  }
  if (session_->round_closed() && !handed_up_) hand_up();
  arm_deadline();
}

void Gateway::announce(uint32_t agent) {
  const Device& d = devices_[agent];
  if (d.conn == nullptr) return;
  protocol::Announcement a = session_->announcement(agent, now_ms());
  const uint64_t total = 8ull * a.model.size;
  const bool chunked = CutAnnouncement(a, d.chunk_limit);
  wire::Envelope env;
  wire::Encode(a, env);
  d.conn->send(env);
  devices_[agent].bytes_down += env.ByteSizeLong() + 4;
  if (!chunked) return;
  auto model = [this](const protocol::RoundId& id) -> const double* {
    if (session_ == nullptr || !session_->round_open() || session_->current() != id) return nullptr;
    return session_->announced_model().data;
  };
  d.conn->stream(BroadcastChunks(a.id, total, d.chunk_limit, model,
                                 [this, agent](uint64_t bytes) { devices_[agent].bytes_down += bytes; }));
}

// This round's aggregate of the devices up: a partial, or a masked sum.
void Gateway::hand_up() {
  wire::GatewayEnvelope ge;
  if (secure_) {
    protocol::MaskedSum m;
    summer_.take(m);
    if (m.members.empty()) return;
    for (uint32_t a : m.members) {
      m.bytes_down.push_back(devices_[a].bytes_down);
      m.bytes_up.push_back(devices_[a].bytes_up);
    }
    wire::Encode(m, ge.mutable_masked_sum());
    Log().info("masked_sum round={} members={}", m.id.round + 1, m.members.size());
  } else {
    handed_up_ = true;
    protocol::Partial p;
    if (Status st = session_->export_partial(p); !st.ok()) {
      Log().error("partial round={}: {}", session_->current().round, st.message());
      return;
    }
    if (p.members.empty() && p.unclipped.empty() && p.over_norm.empty() && p.failure.empty()) return;
    for (uint32_t a : p.members) {
      p.bytes_down.push_back(devices_[a].bytes_down);
      p.bytes_up.push_back(devices_[a].bytes_up);
    }
    wire::Encode(p, ge.mutable_partial());
    Log().info("partial round={} members={} bits_up={}", p.id.round == protocol::kInitRound ? std::string("init") : std::to_string(p.id.round + 1),
               p.members.size(), p.bits_up);
  }
  send_up(ge);
}

void Gateway::arm_deadline() {
  const uint64_t at = session_ != nullptr ? session_->next_deadline_ms() : protocol::ServerSession::kNoDeadline;
  if (at == armed_for_) return;
  armed_for_ = at;
  deadline_.cancel();
  if (at == protocol::ServerSession::kNoDeadline) return;
  deadline_.expires_at(t0_ + std::chrono::milliseconds(at));
  deadline_.async_wait([this, at](const std::error_code& ec) {
    if (ec || at != armed_for_ || session_ == nullptr) return;
    armed_for_ = protocol::ServerSession::kNoDeadline;
    session_->tick(std::max(at, now_ms()));
    deliver();
  });
}

}  // namespace fedrt::net::detail

namespace fedrt::net {

Status RunGateway(const GatewayOptions& options) {
  detail::Gateway g(options);
  FEDRT_TRY(g.init());
  return g.run();
}

}  // namespace fedrt::net
