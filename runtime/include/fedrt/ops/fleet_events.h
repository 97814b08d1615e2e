#pragma once
// FleetEvents: what FleetRounds tells an observer as the rounds go (the
// operator's view, ops/fleet_monitor.h; docs/dashboard.md). Called from the
// coordinator's event loop, never with a lock of FleetRounds held; every
// method has an empty default. Host code.

#include <cstdint>
#include <string>

#include "fedrt/ops/round_record.h"
#include "fedrt/protocol/messages.h"

namespace fedrt::net {

class FleetEvents {
 public:
  virtual ~FleetEvents() = default;
  // A round opened: `sampled` agents are called on (FedEM's initial exchange: round kInitRound).
  virtual void round_opened(const protocol::RoundId& id, uint32_t sampled) {}
  // An agent was sent the round's announcement.
  virtual void announced(uint32_t agent) {}
  // An agent's update (or its masked input under SecAgg+) arrived whole and was accepted.
  virtual void submitted(uint32_t agent) {}
  // A SecAgg+ phase is open: 1 advertise, 2 shares, 3 masked, 4 check, 5 unmask; `n` agents are asked.
  virtual void secagg_phase(int phase, uint32_t n) {}
  // An accepted SecAgg+ message of the open phase.
  virtual void secagg_answer(uint32_t agent) {}
  // Frame bytes of round traffic (protocol messages, with their 4-byte length prefix).
  virtual void traffic(uint32_t agent, uint64_t bytes_up, uint64_t bytes_down) {}
  // A round is durable: its record (reports per member) and its latency from open to close.
  virtual void round_closed(const RoundRecord& record, double latency_ms) {}
  // Central DP-FedAvg: epsilon spent by (algorithm, run) after its latest round (docs/privacy.md).
  virtual void privacy_spent(uint32_t algorithm, uint32_t run, double epsilon) {}
};

}  // namespace fedrt::net
