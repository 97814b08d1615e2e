#pragma once
// One run's privacy ledger in central DP-FedAvg (docs/privacy.md, "DP-FedAvg
// in the simulator"), shared by every driver so that the simulator and the
// coordinator report the same epsilon after each round and stop at the same
// round: epsilon_t = Epsilon(t rounds at rate q, noise multiplier sigma), and
// round t + 1 runs only if epsilon_{t+1} <= epsilon_budget (classic
// conversion). Host code.

#include <cstdint>
#include <optional>
#include <string>

#include "fedrt/core/status.h"
#include "fedrt/privacy/rdp_accountant.h"

namespace fedrt::privacy {

class RunBudget {
 public:
  // delta in (0, 1); budget > 0 or none; q = rate, sigma = noise_multiplier;
  // `rounds` = T, the rounds the run would have without a budget. A budget
  // below one round's epsilon is refused, naming privacy.epsilon_budget.
  static Result<RunBudget> Create(double delta, std::optional<double> budget, double rate, double noise_multiplier,
                                  uint32_t rounds);

  // The next round closed: epsilon spent after it. When the round after it
  // would exceed the budget, stop() says so from now on.
  Result<double> CloseRound();
  double epsilon() const { return accountant_.Spent().epsilon; }
  uint32_t rounds_closed() const { return closed_; }
  // Empty, or "stopped after round t of T: round t+1 would take epsilon from
  // e past privacy.epsilon_budget b".
  const std::string& stop() const { return stop_; }

  // The rounds the budget lets a run close (T without a budget): what
  // CloseRound would allow, computed ahead for a driver that schedules rounds.
  static Result<uint32_t> RoundsAllowed(double delta, std::optional<double> budget, double rate,
                                        double noise_multiplier, uint32_t rounds);

 private:
  RunBudget(RdpAccountant a) : accountant_(std::move(a)) {}
  RdpAccountant accountant_;
  double rate_ = 1, sigma_ = 0;
  uint32_t rounds_ = 0, closed_ = 0;
  std::string stop_;
};

}  // namespace fedrt::privacy
