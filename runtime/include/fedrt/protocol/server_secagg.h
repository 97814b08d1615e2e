#pragma once
// ServerSecAgg: the server's part in one SecAgg+ round per model round
// (secagg/server.h; fedrt.proto "Secure aggregation"), phase by phase:
// 1 advertise keys -> 2 share keys -> 3 masked inputs -> 4 consistency check
// (survivor lists confirmed between neighbours) -> 5 unmasking. Device
// ids u are the sampled agents in ascending order. A phase closes when every
// device still expected in it answered or at its deadline; a device that
// disconnects after advertising is a dropout. Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/secagg/server.h"

namespace fedrt::protocol {

class ServerSecAgg {
 public:
  // A secure round over `sampled` (ascending agents) with inputs of `dim`
  // b-bit integers; round id (algorithm << 48 | run << 32 | round).
  Status begin(const task::Task& task, const RoundId& id, const std::vector<uint32_t>& sampled, uint32_t dim,
               uint32_t bits);
  int phase() const { return phase_; }  // 0: no secure round; 1..5 as above; 6: unmasked
  bool member(uint32_t agent) const { return agent < id_of_.size() && id_of_[agent] >= 0; }
  SecAggRound params_for(uint32_t agent) const;

  // A device message of `phase` (1..5); an error says why it was refused
  // (the device then leaves the round when the server's state machine refused it).
  Status on_message(uint32_t agent, int phase, const RoundId& id, const SecAggAdvertiseMsg* ad,
                    const SecAggSharesMsg* sh, const SecAggMaskedMsg* ma, const SecAggCheckMsg* ch,
                    const SecAggUnmaskMsg* un);
  // Phase 3 through a gateway: the masked inputs of `agents` summed mod 2^32
  // (dim values), checked like theirs one by one before anything moves.
  Status on_masked_sum(const std::vector<uint32_t>& agents, const uint32_t* ysum, uint32_t dim);
  // A device's connection was lost: after advertising it is a dropout.
  void on_disconnect(uint32_t agent);
  // True when every device still expected in the phase answered.
  bool phase_complete() const;
  // Closes the phase. On success `notify` lists the agents to send the next
  // phase's message to (empty after unmasking: finished() is set).
  Status advance(std::vector<uint32_t>& notify);
  bool finished() const { return phase_ == 6; }
  uint32_t answered() const;
  // The agents the open phase still waits for, ascending (a gateway is told
  // which of its devices owe a masked input).
  void waiting_for(std::vector<uint32_t>& out) const;
  uint32_t n() const { return p_.n; }

  // What the server sends agent a in the current phase (views valid until the next call).
  SecAggKeysMsg keys_for(uint32_t agent);
  SecAggSharesMsg shares_for(uint32_t agent);
  SecAggUnmaskRequestMsg survivors_for(uint32_t agent);
  SecAggCheckMsg checks_for(uint32_t agent);

  // After unmasking: sum_{u in U3} x_u and the contributing agents.
  const std::vector<uint32_t>& sum() const { return sum_; }
  std::vector<uint32_t> contributors() const;
  // The range check (docs/security.md, "What a malicious device can do to
  // the model"): m honest b-bit inputs sum to at most m (2^b - 1) < 2^31, one
  // bit of headroom that begin() keeps. After unmasking, the first coordinate
  // whose sum lies above it (a masked input out of range), or -1; -1 always
  // under distributed DP, whose integers wrap by design.
  static constexpr uint64_t kHonestSumMax = 0x7FFFFFFFull;
  int64_t first_out_of_range() const;
  // After unmasking: the agents whose round-3 shares (or round-1 dealing) were
  // off their polynomial, convicted and dropped (secagg/server.h cheaters()),
  // and how many shares were dropped in all.
  std::vector<uint32_t> cheaters() const;
  size_t off_shares() const { return server_.off_shares().size(); }

  uint64_t bytes_up() const { return up_; }
  uint64_t bytes_down() const { return down_; }
  const secagg::RoundParams& params() const { return p_; }

 private:
  secagg::SecAggServer server_;
  secagg::RoundParams p_{};
  RoundId id_{};
  int phase_ = 0;
  bool range_checked_ = true;
  std::vector<uint32_t> agent_of_;  // u -> agent
  std::vector<int> id_of_;          // agent -> u (-1)
  std::vector<char> expected_, answered_, left_;
  std::vector<uint32_t> sum_;
  std::vector<secagg::Advertise> ads_;
  std::vector<secagg::ShareCiphertext> cts_;
  std::vector<uint32_t> surv_;
  std::vector<secagg::ConsistencyTag> tags_;
  uint64_t up_ = 0, down_ = 0;
};

}  // namespace fedrt::protocol
