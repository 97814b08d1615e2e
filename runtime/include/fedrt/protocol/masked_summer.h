#pragma once
// MaskedSummer: a gateway's part in phase 3 of a secure round
// (docs/gateways.md, "Secure rounds"). The gateway relays its devices'
// SecAgg+ keys, shares, checks and unmasking messages as they are; their
// masked inputs it sums modulo 2^32 and hands up as one MaskedSum once every
// device the coordinator asked has answered (or left). A masked input is
// uniformly random to whoever lacks the masks, so the gateway learns no
// device's input, and the coordinator only the round's total. Host code.

#include <cstdint>
#include <map>
#include <vector>

#include "fedrt/protocol/messages.h"
#include "fedrt/protocol/partial.h"
#include "fedrt/protocol/server_session.h"

namespace fedrt::protocol {

class MaskedSummer {
 public:
  // The secure round `id` begins at this gateway: nothing expected yet.
  void begin(const RoundId& id);
  // The coordinator asks these agents (of this gateway) for their masked
  // inputs: the summer is ready when each answered or left.
  void expect(const std::vector<uint32_t>& agents);
  bool armed() const { return armed_; }
  // The agent's connection was lost before it answered: not waited for.
  void drop(uint32_t agent);
  // A device's masked input: for this round, expected, once, of one length.
  Verdict add(uint32_t agent, const SecAggMaskedMsg& m);
  // Every expected agent answered or left, and one at least answered.
  bool ready() const;
  bool waiting() const { return open_ && !expected_.empty(); }
  // The sum so far with its members (ascending); the summer is then closed.
  void take(MaskedSum& out);

 private:
  struct Entry {
    bool answered = false;
    WorkReport report;
  };
  RoundId id_{};
  bool open_ = false;
  bool armed_ = false;
  std::map<uint32_t, Entry> expected_;
  std::vector<uint32_t> sum_;
};

}  // namespace fedrt::protocol
