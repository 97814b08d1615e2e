#include "fedrt/sim/gateway_hub.h"

#include <fmt/format.h>

namespace fedrt::sim {

using protocol::MessageKind;
using protocol::ServerSession;

Status GatewayHub::init(const protocol::ServerOptions& so, uint32_t gateways) {
  gateways_.clear();
  summers_.assign(gateways, protocol::MaskedSummer{});
  sent_.assign(gateways, 0);
  secure_ = false;
  if (gateways == 0) return Status::Ok();
  const uint32_t n = so.task.problem.agents;
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
  (void)round;
  secure_ = root.task().secagg.enabled && root.current().round != protocol::kInitRound;
  std::fill(sent_.begin(), sent_.end(), 0);
  if (secure_) {
    for (auto& s : summers_) s.begin(root.current());
    return Status::Ok();
  }
  root.basis(basis_);
  for (uint32_t g = 0; g < gateways_.size(); ++g) {
    ServerSession& gw = gateways_[g];
    FEDRT_TRY(gw.open_from(basis_, 0));
    protocol::Outgoing out;
    while (gw.next_outgoing(out)) {
    }  // the driver announces from the coordinator's outbox, with the gateway's contents
    if (gw.round_closed()) FEDRT_TRY(forward(g, root));
  }
  return Status::Ok();
}

void GatewayHub::relayed(const ServerSession& root, uint32_t agent, MessageKind kind) {
  (void)agent;
  if (!secure_ || kind != MessageKind::kSecAggSharesIn || summers_[0].armed()) return;
  root.secagg().waiting_for(waiting_);  // phase 3's: every agent sent its shares
  std::vector<std::vector<uint32_t>> per(summers_.size());
  for (uint32_t a : waiting_) per[a % summers_.size()].push_back(a);
  for (size_t g = 0; g < summers_.size(); ++g) summers_[g].expect(per[g]);
}

void GatewayHub::dropped(uint32_t agent) {
  if (secure_) summers_[agent % summers_.size()].drop(agent);
}

Status GatewayHub::forward(uint32_t g, ServerSession& root) {
  if (sent_[g]) return Status::Ok();
  sent_[g] = 1;
  FEDRT_TRY(gateways_[g].export_partial(partial_));
  const protocol::Verdict v = root.on_partial(partial_, 0);
  if (!v.ok()) return Status(StatusCode::kInternal, fmt::format("gateway {}: the coordinator refused its partial: {}", g, v.why));
  return Status::Ok();
}

Status GatewayHub::forward_masked(uint32_t g, ServerSession& root) {
  summers_[g].take(masked_);
  if (masked_.members.empty()) return Status::Ok();
  const protocol::Verdict v = root.on_masked_sum(masked_, 0);
  if (!v.ok())
    return Status(StatusCode::kInternal, fmt::format("gateway {}: the coordinator refused its masked sum: {}", g, v.why));
  return Status::Ok();
}

Status GatewayHub::deliver(uint32_t agent, const protocol::ClientMessage& m, ServerSession& root) {
  const uint32_t g = agent % static_cast<uint32_t>(gateways_.size());
  protocol::Verdict v;
  if (!secure_) {
    v = gateways_[g].on_message(agent, m, 0);
  } else if (m.kind == MessageKind::kSecAggMasked) {
    v = summers_[g].add(agent, m.masked);
  } else {
    v = root.on_message(agent, m, 0);  // relayed as it is
  }
  if (!v.ok()) return Status(StatusCode::kInternal, fmt::format("agent {}: its message was refused: {}", agent, v.why));
  if (!secure_ && gateways_[g].round_closed()) return forward(g, root);
  if (secure_ && summers_[g].ready()) return forward_masked(g, root);
  return Status::Ok();
}

Status GatewayHub::tick(ServerSession& root) {
  for (uint32_t g = 0; g < gateways_.size(); ++g) {
    if (secure_) {
      if (summers_[g].waiting()) FEDRT_TRY(forward_masked(g, root));
      continue;
    }
    ServerSession& gw = gateways_[g];
    if (!gw.round_open()) continue;
    gw.tick(ServerSession::kNoDeadline - 1);
    if (gw.round_closed()) FEDRT_TRY(forward(g, root));
  }
  return Status::Ok();
}

void GatewayHub::settle(const ServerSession& root) {
  if (secure_) return;  // the coordinator's results go down as they are
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
