#pragma once
// A closed round as the coordinator records it (the state store's round log,
// coordinator/state_store.h) and as the operator's view takes it
// (ops/fleet_monitor.h): the model, the session's state, and what the round
// cost and measured. Host only.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fedrt::net {

// What one member of a round reported (devices.csv): its work report, and the
// frame bytes the coordinator exchanged with it during the round.
struct MemberReport {
  uint32_t device = 0;
  uint64_t examples = 0;     // the update's sample count
  double loss_before = 0.0;  // NaN: not measured
  double loss_after = 0.0;
  uint32_t duration_ms = 0;
  uint64_t bytes_down = 0, bytes_up = 0;
};

struct RoundRecord {
  uint32_t algorithm = 0;  // index in the experiment's algorithm list
  uint32_t run = 0;
  uint32_t round = 0;      // t: theta is theta_{t+1}; 0xFFFFFFFF: FedEM's initial exchange
  std::vector<double> theta;  // the reported model after the round (loaded with kTheta)
  std::vector<double> state;  // the server session's state (loaded with kState)
  uint64_t samples = 0;
  uint32_t agents = 0;     // updates aggregated
  uint32_t sampled = 0;
  double error = 0.0;
  uint64_t bits_up = 0;
  uint64_t bits_down = 0;
  double closed_at = 0.0;  // seconds since the epoch
  std::string closed_by;   // all | deadline | empty | secagg | failed
  std::string failure;     // why a failed round aggregated nothing
  double train_loss = 0.0; // mean of the members' loss_before (NaN: no reports)
  double local_loss = 0.0; // mean of the members' loss_after
  std::vector<MemberReport> reports;  // per member, when the driver has them (saved, not loaded by load_rounds)
  uint64_t theta_in_state = 0;  // > 0: the model is the state's first values (FedAvg's x_t): stored once
  // Buffered asynchronous rounds (docs/async.md): the clock when the step
  // closed (virtual seconds under the virtual clock, else seconds since the
  // run began); NaN: none (saved in round_times, not loaded by load_rounds).
  double time_s = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace fedrt::net
