#pragma once
// GatewayHub: the simulator's gateways (docs/gateways.md). Agent c sits
// behind gateway c mod G; each gateway runs a partial server session over its
// agents (protocol::ServerOptions::partial), opened on the coordinator's
// state every round, takes their updates and hands one Partial up to the
// coordinator's session, whose result it hands back down. With G gateways the
// simulator runs the aggregation tree a gateway fleet runs, and its results
// are the flat simulator's bits (tests/unit/sim_gateways_test.cc). Host code.

#include <cstdint>
#include <vector>

#include "fedrt/protocol/server_session.h"

namespace fedrt::sim {

class GatewayHub {
 public:
  // G partial sessions of the coordinator's task (`so`, partial set here).
  Status init(const protocol::ServerOptions& so, uint32_t gateways);
  bool on() const { return !gateways_.empty(); }
  uint32_t count() const { return static_cast<uint32_t>(gateways_.size()); }
  protocol::ServerSession& gateway_of(uint32_t agent) { return gateways_[agent % gateways_.size()]; }

  // The coordinator opened a round: every gateway takes its state (and the
  // compressed downlink's basis) and opens the same round; partials that are
  // ready at once (no agent of theirs sampled) go up.
  Status open(protocol::ServerSession& root, uint32_t round);
  // A device's message, taken by its gateway; a gateway whose round is then
  // complete hands its partial to the coordinator. A refusal is an error.
  Status deliver(uint32_t agent, const protocol::ClientMessage& m, protocol::ServerSession& root);
  // Nothing moves: every open gateway closes by its deadline, its partial goes up.
  Status tick(protocol::ServerSession& root);
  // The coordinator closed the round: each gateway settles with its members
  // and the result's model, and publishes.
  void settle(const protocol::ServerSession& root);

 private:
  Status forward(protocol::ServerSession& gw, protocol::ServerSession& root);

  std::vector<protocol::ServerSession> gateways_;
  std::vector<char> sent_;  // per gateway: this round's partial went up
  std::vector<double> state_;
  protocol::Partial partial_;
  std::vector<uint32_t> included_;
};

}  // namespace fedrt::sim
