#pragma once
// One run's privacy ledger in central DP-FedAvg (docs/privacy.md, "DP-FedAvg
// in the simulator"), shared by every driver so that the simulator and the
// coordinator report the same epsilon after each round and stop at the same
// round: epsilon_t = Epsilon(rounds 1..t at rate q, each at its noise
// multiplier sigma_s), and round t + 1 runs only if epsilon_{t+1} <=
// epsilon_budget (classic conversion). sigma_s is the configured sigma
// (central) or the round's effective multiplier (distributed: it depends on
// the round's sampled count; protocol/dp_round_sigma.h). Host code.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fedrt/core/status.h"
#include "fedrt/privacy/rdp_accountant.h"

namespace fedrt::privacy {

class RunBudget {
 public:
  // The noise multiplier round s (0-based) will be accounted at, as far as
  // it can be known before it runs.
  using RoundSigma = std::function<double(uint32_t round)>;

  // delta in (0, 1); budget > 0 or none; q = rate, sigma = noise_multiplier;
  // `rounds` = T, the rounds the run would have without a budget. A budget
  // below one round's epsilon is refused, naming privacy.epsilon_budget.
  static Result<RunBudget> Create(double delta, std::optional<double> budget, double rate, double noise_multiplier,
                                  uint32_t rounds);
  // The same with a multiplier per round.
  static Result<RunBudget> Create(double delta, std::optional<double> budget, double rate, RoundSigma sigma,
                                  uint32_t rounds);

  // The next round closed, at the multiplier it had (default: the one
  // foreseen): epsilon spent after it. When the round after it would exceed
  // the budget, stop() says so from now on.
  Result<double> CloseRound(std::optional<double> sigma = std::nullopt);
  double epsilon() const { return accountant_.Spent().epsilon; }
  uint32_t rounds_closed() const { return closed_; }
  // Empty, or "stopped after round t of T: round t+1 would take epsilon from
  // e past privacy.epsilon_budget b".
  const std::string& stop() const { return stop_; }

  // The rounds the budget lets a run close (T without a budget): what
  // CloseRound would allow, computed ahead for a driver that schedules rounds.
  static Result<uint32_t> RoundsAllowed(double delta, std::optional<double> budget, double rate,
                                        double noise_multiplier, uint32_t rounds);
  static Result<uint32_t> RoundsAllowed(double delta, std::optional<double> budget, double rate, RoundSigma sigma,
                                        uint32_t rounds);

 private:
  RunBudget(RdpAccountant a) : accountant_(std::move(a)) {}
  RdpAccountant accountant_;
  double rate_ = 1;
  RoundSigma sigma_;
  uint32_t rounds_ = 0, closed_ = 0;
  std::string stop_;
};

}  // namespace fedrt::privacy
