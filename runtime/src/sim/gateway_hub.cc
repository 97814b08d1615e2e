#include "fedrt/sim/gateway_hub.h"

#include <fmt/format.h>

namespace fedrt::sim {

using protocol::ServerSession;

Status GatewayHub::init(const protocol::ServerOptions& so, uint32_t gateways) {
  gateways_.clear();
  sent_.assign(gateways, 0);
  if (gateways == 0) return Status::Ok();
  const uint32_t n = so.task.problem.agents;
  if (so.task.secagg.enabled)
    return Status::InvalidArgument("simulator: gateways do not run secure aggregation yet (secagg.enabled)");
  protocol::ServerOptions o = so;
  o.partial = true;
  o.deadline_ms = 0;
  gateways_ = std::vector<ServerSession>(gateways);
  for (uint32_t g = 0; g < gateways; ++g) {
    FEDRT_TRY(gateways_[g].init(o));
    for (uint32_t c = 0; c < n; ++c) {
      const bool mine = c % gateways == g;
      gateways_[g].set_served(c, mine);
      gateways_[g].set_connected(c, mine, 0);
    }
  }
  return Status::Ok();
}

Status GatewayHub::open(ServerSession& root, uint32_t round) {
  root.export_state(state_);
  std::vector<uint8_t> deltas[task::kMaxSegments];
  for (uint32_t k = 0; k < root.core().chains(); ++k) deltas[k] = root.downlink_delta(k);
  for (uint32_t g = 0; g < gateways_.size(); ++g) {
    ServerSession& gw = gateways_[g];
    FEDRT_TRY(gw.import_state(state_));
    gw.set_downlink_basis(root.downlink_version(), deltas);
    if (round != protocol::kInitRound && gw.needs_initial_exchange()) gw.mark_initial_exchange_done();  // joined later
    FEDRT_TRY(gw.open_round(round, 0));
    protocol::Outgoing out;
    while (gw.next_outgoing(out)) {
    }  // the driver announces from the coordinator's outbox, with the gateway's contents
    sent_[g] = 0;
    if (gw.round_closed()) FEDRT_TRY(forward(gw, root));
  }
  return Status::Ok();
}

Status GatewayHub::forward(ServerSession& gw, ServerSession& root) {
  const uint32_t g = static_cast<uint32_t>(&gw - gateways_.data());
  if (sent_[g]) return Status::Ok();
  sent_[g] = 1;
  FEDRT_TRY(gw.export_partial(partial_));
  const protocol::Verdict v = root.on_partial(partial_, 0);
  if (!v.ok()) return Status(StatusCode::kInternal, fmt::format("gateway {}: the coordinator refused its partial: {}", g, v.why));
  return Status::Ok();
}

Status GatewayHub::deliver(uint32_t agent, const protocol::ClientMessage& m, ServerSession& root) {
  ServerSession& gw = gateway_of(agent);
  const protocol::Verdict v = gw.on_message(agent, m, 0);
  if (!v.ok()) return Status(StatusCode::kInternal, fmt::format("agent {}: its gateway refused its message: {}", agent, v.why));
  if (gw.round_closed()) return forward(gw, root);
  return Status::Ok();
}

Status GatewayHub::tick(ServerSession& root) {
  for (ServerSession& gw : gateways_) {
    if (!gw.round_open()) continue;
    gw.tick(ServerSession::kNoDeadline - 1);
    if (gw.round_closed()) FEDRT_TRY(forward(gw, root));
  }
  return Status::Ok();
}

void GatewayHub::settle(const ServerSession& root) {
  const protocol::Commit& c = root.commit();
  const protocol::RoundResult r = root.result(0);
  for (uint32_t g = 0; g < gateways_.size(); ++g) {
    included_.clear();
    for (uint32_t a : c.members)
      if (a % gateways_.size() == g) included_.push_back(a);
    gateways_[g].settle(included_, r.model);
    gateways_[g].publish();
  }
}

}  // namespace fedrt::sim
