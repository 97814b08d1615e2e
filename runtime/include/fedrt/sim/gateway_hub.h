#pragma once
// GatewayHub: the simulator's gateways (docs/gateways.md). Agent c sits
// behind gateway c mod G. In a plain round each gateway runs a partial server
// session over its agents (protocol::ServerOptions::partial), opened on the
// coordinator's state, takes their updates and hands one Partial up to the
// coordinator's session, whose result it hands back down. In a secure round
// it relays the SecAgg+ messages and sums its agents' masked inputs
// (protocol/masked_summer.h). With G gateways the simulator runs the
// aggregation tree a gateway fleet runs, and its results are the flat
// simulator's bits (tests/unit/sim_gateways_test.cc). Host code.

#include <cstdint>
#include <vector>

#include "fedrt/protocol/masked_summer.h"
#include "fedrt/protocol/server_session.h"

namespace fedrt::sim {

class GatewayHub {
 public:
  // G gateways over the coordinator's task (`so`, made partial here).
  Status init(const protocol::ServerOptions& so, uint32_t gateways);
  bool on() const { return !gateways_.empty(); }
  // This round's announcements and results come from the gateways' sessions
  // (a plain round); in a secure round from the coordinator, relayed.
  bool partial_round() const { return on() && !secure_; }
  protocol::ServerSession& gateway_of(uint32_t agent) { return gateways_[agent % gateways_.size()]; }

  // The coordinator opened a round: in a plain one every gateway takes its
  // state (and the compressed downlink's basis) and opens the same round;
  // partials that are ready at once (no agent of theirs sampled) go up.
  Status open(protocol::ServerSession& root, uint32_t round);
  // A coordinator's message on its way to `agent` through its gateway: with
  // the first of phase 3 each gateway learns which of its agents owe a
  // masked input. A device that vanished is dropped from its gateway's sum.
  void relayed(const protocol::ServerSession& root, uint32_t agent, protocol::MessageKind kind);
  void dropped(uint32_t agent);
  // A device's message, taken by its gateway: an update into its partial
  // session, a masked input into its sum, any other SecAgg+ message relayed.
  // What a gateway completes goes up. A refusal is an error.
  Status deliver(uint32_t agent, const protocol::ClientMessage& m, protocol::ServerSession& root);
  // Nothing moves: every open gateway closes by its deadline, its partial goes up.
  Status tick(protocol::ServerSession& root);
  // The coordinator closed the round: each gateway settles with its members
  // and the result's model, and publishes.
  void settle(const protocol::ServerSession& root);

 private:
  Status forward(uint32_t g, protocol::ServerSession& root);
  Status forward_masked(uint32_t g, protocol::ServerSession& root);

  std::vector<protocol::ServerSession> gateways_;
  std::vector<protocol::MaskedSummer> summers_;
  std::vector<char> sent_;  // per gateway: this round's partial went up
  bool secure_ = false;
  protocol::RoundBasis basis_;
  protocol::Partial partial_;
  protocol::MaskedSum masked_;
  std::vector<uint32_t> included_, waiting_;
};

}  // namespace fedrt::sim
