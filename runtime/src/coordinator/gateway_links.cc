// The coordinator's side of the gateway link (docs/gateways.md): a gateway
// is a client with its own identity (KEYS/gateways.tsv) that speaks for the
// devices provisioned behind it and for no other. It registers its devices
// itself and reports them up and down; the coordinator sends it each round's
// basis and verdict instead of announcements and results per device, relays
// the SecAgg+ messages, and takes its partial aggregates and masked sums
// into the open round. Every refusal goes through the bounded refusal log.
#include <fmt/format.h>

#include "coordinator_impl.h"
#include "fedrt/wire/gateway_codec.h"

namespace fedrt::net::detail {

Status Coordinator::load_gateways() {
  auto entries = LoadGateways(opt_.network.keys + "/gateways.tsv");
  if (!entries.ok()) return entries.status();
  via_.assign(task_.problem.agents, -1);
  allowed_.assign(task_.problem.agents, -1);
  for (GatewayEntry& e : *entries) {
    if (registry_.index_of(e.id))
      return Status(StatusCode::kInvalidArgument, fmt::format("gateways.tsv: gateway id '{}' is a device's", e.id));
    GatewayLink link;
    link.id = e.id;
    for (const std::string& d : e.devices) {
      const auto idx = registry_.index_of(d);
      if (!idx || *idx >= task_.problem.agents) continue;  // another experiment's device
      allowed_[*idx] = static_cast<int>(gateways_.size());
      link.agents.push_back(*idx);
    }
    tls_.add_psk(e.id, e.psk);
    gateway_index_[e.id] = gateways_.size();
    gateways_.push_back(std::move(link));
  }
  if (!gateways_.empty())
    CoordinatorLog("gateways provisioned={} devices_behind_them={}", gateways_.size(),
                   std::count_if(allowed_.begin(), allowed_.end(), [](int g) { return g >= 0; }));
  return Status::Ok();
}

bool Coordinator::routed(uint32_t agent) const {
  return agent < via_.size() && via_[agent] >= 0 && registry_.connection(agent) == nullptr;
}

void Coordinator::send_gateway(size_t g, const wire::GatewayEnvelope& ge) {
  Connection* c = gateways_[g].conn;
  if (c == nullptr || !gateways_[g].welcomed) return;
  wire::Envelope env;
  wire::Wrap(ge, env);
  c->send(env);
}

void Coordinator::relay(uint32_t agent, const wire::Envelope& env) {
  if (agent < via_.size() && via_[agent] >= 0) relay_to(static_cast<size_t>(via_[agent]), agent, env);
}

void Coordinator::relay_to(size_t g, uint32_t agent, const wire::Envelope& env) {
  wire::GatewayEnvelope ge;
  ge.mutable_relayed()->set_agent(agent);
  env.SerializeToString(ge.mutable_relayed()->mutable_envelope());
  send_gateway(g, ge);
}

void Coordinator::round_opened(const protocol::ServerSession& session) {
  protocol::RoundBasis b;
  session.basis(b);
  wire::GatewayEnvelope ge;
  wire::Encode(b, ge.mutable_round());
  for (size_t g = 0; g < gateways_.size(); ++g) send_gateway(g, ge);
}

// Each gateway's share of `agents` (those routed through it), in one pass:
// a fleet of N devices behind G gateways costs O(N), not O(G N).
std::vector<std::vector<uint32_t>> Coordinator::by_gateway(const std::vector<uint32_t>& agents, bool routed_only) const {
  std::vector<std::vector<uint32_t>> out(gateways_.size());
  for (uint32_t a : agents)
    if (a < via_.size() && via_[a] >= 0 && (!routed_only || routed(a))) out[static_cast<size_t>(via_[a])].push_back(a);
  return out;
}

void Coordinator::masked_wanted(const protocol::ServerSession& session) {
  std::vector<uint32_t> waiting;
  session.secagg().waiting_for(waiting);
  const auto shares = by_gateway(waiting, true);
  for (size_t g = 0; g < gateways_.size(); ++g) {
    wire::GatewayEnvelope ge;
    wire::MaskedExpect* m = ge.mutable_masked_expect();
    m->set_algorithm_index(session.current().algorithm);
    m->set_run(session.current().run);
    m->set_round(session.current().round);
    for (uint32_t a : shares[g]) m->add_agents(a);
    send_gateway(g, ge);
  }
}

void Coordinator::round_published(const protocol::ServerSession& session) {
  const protocol::Commit& c = session.commit();
  protocol::RoundVerdict v;
  v.id = c.id;
  if (session.core().result_needs_model() && c.id.round != protocol::kInitRound) {
    const protocol::RoundResult r = session.result(0);
    v.model.assign(r.model.data, r.model.data + r.model.size);
  }
  auto shares = by_gateway(c.members, false);
  for (size_t g = 0; g < gateways_.size(); ++g) {
    v.included = std::move(shares[g]);
    wire::GatewayEnvelope ge;
    wire::Encode(v, ge.mutable_result());
    send_gateway(g, ge);
  }
}

void Coordinator::gateway_key(uint32_t agent, const RegistryEntry& e) {
  if (agent >= allowed_.size() || allowed_[agent] < 0) return;
  wire::GatewayEnvelope ge;
  ge.mutable_device_key()->set_device_id(e.id);
  ge.mutable_device_key()->set_psk(std::string(e.psk.begin(), e.psk.end()));
  send_gateway(static_cast<size_t>(allowed_[agent]), ge);
}

void Coordinator::gateway_down(size_t g, const std::string& why) {
  for (uint32_t a : gateways_[g].agents)
    if (via_[a] == static_cast<int>(g)) device_down(a, "gateway " + gateways_[g].id + ": " + why);
  gateways_[g].conn = nullptr;
  gateways_[g].welcomed = false;
  monitor_->gateway(gateways_[g].id, false, "", static_cast<uint32_t>(gateways_[g].agents.size()));
}

void Coordinator::device_down(uint32_t agent, const std::string& why) {
  const bool was_ready = registry_.state(agent) == Registry::State::kReady;
  via_[agent] = -1;
  monitor_->via(agent, "");
  if (registry_.connection(agent) != nullptr) return;  // connected here directly since
  if (registry_.state(agent) != Registry::State::kRefused) registry_.set_state(agent, Registry::State::kOffline);
  monitor_->link(agent, FleetMonitor::Link::kDisconnected, why);
  CoordinatorLog("disconnected device={} index={} reason={}", registry_.id_of(agent), agent, why);
  if (was_ready) rounds_.set_connected(agent, false, now_ms());
}

void Coordinator::on_gateway_frame(Connection& c, const wire::Envelope& env) {
  auto slot = gateway_index_.find(c.identity());
  if (slot == gateway_index_.end()) {
    refused("rejected/gateway_link", "rejected device={} peer={} reason=malformed: a gateway-link message from a "
            "device that is not a gateway (connection closed)", c.identity(), c.peer());
    monitor_->frame_rejected("malformed");
    c.send_error(wire::ERROR_MALFORMED, "gateway-link messages come from gateways only", true);
    return;
  }
  const size_t g = slot->second;
  GatewayLink& link = gateways_[g];
  wire::GatewayEnvelope ge;
  std::string why;
  auto reject = [&](const std::string& reason, bool close) {
    refused("rejected/gateway/" + link.id, "rejected gateway={} peer={} reason={}{}", link.id, c.peer(), reason,
            close ? " (connection closed)" : "");
    monitor_->frame_rejected("gateway");
    c.send_error(wire::ERROR_MALFORMED, reason, close);
  };
  if (!wire::Unwrap(env, ge, why)) return reject(why, true);
  if (ge.body_case() == wire::GatewayEnvelope::kHello) {
    if (c.state() != Connection::State::kAwaitHello) return reject("a second GatewayHello", true);
    if (ge.hello().protocol_version() != wire::kProtocolVersion)
      return reject(fmt::format("protocol version {} (this coordinator speaks {})", ge.hello().protocol_version(),
                                wire::kProtocolVersion), true);
    if (ge.hello().gateway_id() != c.identity())
      return reject(fmt::format("gateway id '{}' does not match the TLS identity", ge.hello().gateway_id()), true);
    if (link.conn != nullptr && link.conn != &c) {
      CoordinatorWarn("superseded gateway={} old_peer={} new_peer={}", link.id, link.conn->peer(), c.peer());
      Connection* old = link.conn;
      gateway_down(g, "superseded by a new connection");
      old->close("superseded by a new connection");
    }
    c.set_registered(-1);
    handshaking_.erase(c.serial());
    link.conn = &c;
    gateway_of_conn_[&c] = g;
    wire::GatewayEnvelope w;
    wire::GatewayWelcome* gw = w.mutable_welcome();
    wire::EncodeTask(task_, gw->mutable_task());
    gw->set_num_devices(task_.problem.agents);
    std::map<std::string, const SecretBytes*> psks;
    for (const RegistryEntry& e : registry_.entries()) psks[e.id] = &e.psk;
    for (uint32_t a : link.agents) {
      gw->add_device_ids(registry_.id_of(a));
      gw->add_agents(a);
      const auto k = psks.find(registry_.id_of(a));
      gw->add_device_psks(k != psks.end() ? std::string(k->second->begin(), k->second->end()) : std::string());
    }
    if (opt_.network.idle_timeout_ms > 0) gw->set_heartbeat_ms(static_cast<uint32_t>(heartbeat_ms()));
    gw->set_deadline_ms(static_cast<uint32_t>(opt_.network.deadline_ms));
    link.welcomed = true;
    send_gateway(g, w);
    CoordinatorLog("gateway gateway={} peer={} devices={} tls={}", link.id, c.peer(), link.agents.size(), c.tls_session());
    monitor_->gateway(link.id, true, c.peer(), static_cast<uint32_t>(link.agents.size()));
    protocol::RoundBasis b;
    if (rounds_.basis(b)) {  // a round is open: the gateway joins it
      wire::GatewayEnvelope r;
      wire::Encode(b, r.mutable_round());
      send_gateway(g, r);
    }
    return;
  }
  if (gateway_of_conn_.count(&c) == 0) return reject("first message must be GatewayHello", true);
  auto mine = [&](uint32_t a) { return a < allowed_.size() && allowed_[a] == static_cast<int>(g); };
  switch (ge.body_case()) {
    case wire::GatewayEnvelope::kDeviceUp: {
      const wire::DeviceUp& u = ge.device_up();
      const uint32_t a = u.agent();
      if (!mine(a)) return reject(fmt::format("device_up for agent {}, not behind this gateway", a), false);
      if (const std::string* revoked = registry_.revoked(registry_.id_of(a))) {
        wire::Envelope e;
        e.mutable_error()->set_reason(wire::ERROR_IDENTITY);
        e.mutable_error()->set_message(fmt::format("device '{}' is revoked: {}", registry_.id_of(a), *revoked));
        relay_to(g, a, e);
        return;
      }
      if (Connection* old = registry_.connection(a)) {
        CoordinatorWarn("superseded device={} old_peer={} via gateway={}", registry_.id_of(a), old->peer(), link.id);
        if (registry_.state(a) == Registry::State::kReady) rounds_.set_connected(a, false, now_ms());
        registry_.detach(a, old);
        old->close("superseded by a connection through gateway " + link.id);
      }
      via_[a] = static_cast<int>(g);
      monitor_->via(a, link.id);
      monitor_->platform(a, u.platform().empty() ? std::string("unknown") : u.platform().substr(0, 32));
      if (!u.accepted()) {
        const std::string r = u.refusal().substr(0, task::kMaxReasonChars);
        registry_.set_state(a, Registry::State::kRefused, r);
        monitor_->link(a, FleetMonitor::Link::kRefused, r);
        CoordinatorWarn("refused device={} index={} via={} stage=task reason={}", registry_.id_of(a), a, link.id, r);
        rounds_.set_refused(a, now_ms());
        maybe_start(false);
        return;
      }
      registry_.set_state(a, Registry::State::kReady);
      monitor_->link(a, FleetMonitor::Link::kConnected, "", u.peer().substr(0, 64));
      (void)store_->upsert_device(registry_.id_of(a), a, "registered via " + link.id);
      CoordinatorLog("ready device={} index={} via={} tls={}", registry_.id_of(a), a, link.id, u.tls().substr(0, 32));
      if (u.has_pending()) {
        wire::Envelope e;
        auto replayed = rounds_.replay(a, protocol::RoundId{u.pending_algorithm(), u.pending_run(), u.pending_round()}, e);
        if (replayed.ok() && *replayed) relay(a, e);
      }
      rounds_.set_connected(a, true, now_ms());
      maybe_start(false);
      return;
    }
    case wire::GatewayEnvelope::kDeviceDown: {
      const uint32_t a = ge.device_down().agent();
      if (!mine(a)) return reject(fmt::format("device_down for agent {}, not behind this gateway", a), false);
      if (via_[a] == static_cast<int>(g)) device_down(a, ge.device_down().reason().substr(0, 128));
      return;
    }
    case wire::GatewayEnvelope::kRelayed: {
      const uint32_t a = ge.relayed().agent();
      if (!mine(a) || via_[a] != static_cast<int>(g) || registry_.state(a) != Registry::State::kReady)
        return reject(fmt::format("a relayed message of agent {}, not up behind this gateway", a), false);
      wire::Envelope inner;
      wire::WireError err;
      if (!wire::ParseEnvelope(ge.relayed().envelope(), inner, err) || !inner.gateway().empty())
        return reject(fmt::format("agent {}: {}", a, err.message), false);
      if (!inbound_.decode(inner, err)) return reject(fmt::format("agent {}: {}", a, err.message), false);
      const protocol::Verdict v = rounds_.on_message(a, inner, inbound_, now_ms());
      if (!v.ok()) {
        refused(fmt::format("rejected/relayed/{}", registry_.id_of(a)), "rejected device={} via={} reason={}",
                registry_.id_of(a), link.id, v.why);
        wire::Envelope e;
        e.mutable_error()->set_reason(wire::ERROR_MALFORMED);
        e.mutable_error()->set_message(v.why.substr(0, task::kMaxReasonChars));
        relay(a, e);
      }
      return;
    }
    case wire::GatewayEnvelope::kPartial: {
      protocol::Partial p;
      if (Status st = wire::Decode(ge.partial(), p); !st.ok()) return reject(std::string(st.message()), false);
      for (const auto* list : {&p.members, &p.unclipped, &p.over_norm})
        for (uint32_t a : *list)
          if (!mine(a) || via_[a] != static_cast<int>(g))
            return reject(fmt::format("a partial aggregate with agent {}, not up behind this gateway", a), false);
      monitor_->gateway_handed_up(link.id);  // before the round may close on it
      if (p.bytes_down.size() == p.members.size() && p.bytes_up.size() == p.members.size())
        for (size_t i = 0; i < p.members.size(); ++i) rounds_.add_traffic(p.members[i], p.bytes_down[i], p.bytes_up[i]);
      const protocol::Verdict v = rounds_.on_partial(p, now_ms());
      if (!v.ok()) return reject("partial aggregate refused: " + v.why, false);
      for (uint32_t a : p.unclipped)
        refused(fmt::format("dropped/{}", registry_.id_of(a)), "dropped device={} via={} reason=unclipped (privacy.clip)",
                registry_.id_of(a), link.id);
      for (uint32_t a : p.over_norm)
        refused(fmt::format("dropped/{}", registry_.id_of(a)),
                "dropped device={} via={} reason=update_norm (robustness.max_update_norm)", registry_.id_of(a), link.id);
      return;
    }
    case wire::GatewayEnvelope::kMaskedSum: {
      protocol::MaskedSum m;
      if (Status st = wire::Decode(ge.masked_sum(), m); !st.ok()) return reject(std::string(st.message()), false);
      for (uint32_t a : m.members)
        if (!mine(a) || via_[a] != static_cast<int>(g))
          return reject(fmt::format("a masked sum with agent {}, not up behind this gateway", a), false);
      monitor_->gateway_handed_up(link.id);
      if (m.bytes_down.size() == m.members.size() && m.bytes_up.size() == m.members.size())
        for (size_t i = 0; i < m.members.size(); ++i) rounds_.add_traffic(m.members[i], m.bytes_down[i], m.bytes_up[i]);
      const protocol::Verdict v = rounds_.on_masked_sum(m, now_ms());
      if (!v.ok()) return reject("masked sum refused: " + v.why, false);
      return;
    }
    default:
      return reject(fmt::format("gateway-link message {} is not a gateway's", static_cast<int>(ge.body_case())), false);
  }
}

}  // namespace fedrt::net::detail
