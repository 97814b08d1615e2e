#pragma once
// The agents' messages of one exchange between the ranks (docs/architecture.md,
// "MPI"): each rank packs the messages of the agents it owns, in the order
// its driver produced them, and lists every agent whose message the server
// takes in this exchange, in the single-process driver's order; after the
// exchange every rank feeds its server replica all messages in that order.
// The layout is native (every rank runs the same build). Host code.

#include <cstdint>
#include <functional>
#include <vector>

#include "fedrt/protocol/client_session.h"
#include "fedrt/sim/rank_exchange.h"

namespace fedrt::sim {

class RankMessages {
 public:
  using Feed = std::function<Status(uint32_t agent, const protocol::ClientMessage& message)>;

  // The server takes agent's message next (every rank says this for every agent).
  void expect(uint32_t agent) { order_.push_back(agent); }
  // The message of an agent this rank owns (in the order of expect() among its agents).
  Status put(uint32_t agent, const protocol::ClientMessage& message);
  bool empty() const { return order_.empty(); }
  // Exchanges the messages and this rank's samples, then feeds every message
  // in the expected order; `samples` gets the sum over the ranks.
  Status exchange(RankChannel& channel, uint32_t agents, uint64_t samples_mine, uint64_t& samples, const Feed& feed);

 private:
  std::vector<uint32_t> order_;
  std::vector<uint8_t> mine_, all_;
  std::vector<size_t> offsets_;
  // A decoded message's arrays, aligned (its views point here or, for
  // payload bytes, into all_).
  std::vector<secagg::ShareCiphertext> cts_;
  std::vector<uint32_t> words_;
  std::vector<secagg::UnmaskShare> unmask_;
  std::vector<secagg::ConsistencyTag> tags_;
};

}  // namespace fedrt::sim
