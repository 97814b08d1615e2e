#pragma once
// Central DP-FedAvg on the fleet (docs/privacy.md, "DP-FedAvg on the fleet"):
// what the coordinator adds to the shared ServerSession, as fedrt-sim does
// (runtime/src/sim/pair_runner.cc). Each (algorithm, run) gets the noise
// source N(0, 1) of its server session, from the OS's cryptographic source,
// or under privacy.test_seed from GaussianNoise::Seeded(test_seed, run,
// algorithm), the simulator's stream, so the fleet's noise is its bits; and a
// ledger (privacy/run_budget.h) that gives epsilon after every closed round
// and stops a run before a round that would take it past
// privacy.epsilon_budget. Host code.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fedrt/config/adaptive_clip.h"
#include "fedrt/config/experiment.h"
#include "fedrt/core/status.h"
#include "fedrt/privacy/run_budget.h"
#include "fedrt/task/task.h"

namespace fedrt::net {

class PrivacyRounds {
 public:
  using Noise = std::function<Status(double* out, size_t n)>;

  // Off unless task.privacy.enabled; refuses a budget below one round's epsilon.
  Status init(const config::PrivacySettings& settings, const task::Task& task, const std::vector<std::string>& names);
  bool on() const { return on_; }
  // Rounds each run may close: T, or fewer under privacy.epsilon_budget.
  uint32_t rounds_allowed() const { return allowed_; }
  // The noise of (algorithm, run)'s session, resumed after `closed` rounds
  // whose noise (`per_round` draws each) a committed state already holds.
  Noise noise(uint32_t algorithm, uint32_t run, uint32_t closed, size_t per_round) const;
  // Round t (0-based) of (algorithm, run) closed: the epsilon spent after it.
  // Logs it (with adaptive clipping the clip the round used), the warning
  // that a test_seed run is not private (every round), and the budget's stop
  // after the run's last round.
  Result<double> closed(uint32_t algorithm, uint32_t run, uint32_t t, double clip = 0);
  // Adaptive clipping's parameters (config/adaptive_clip.h): off without privacy.adaptive_quantile.
  const algorithms::AdaptiveClip& adaptive() const { return adaptive_; }

 private:
  bool on_ = false;
  config::PrivacySettings settings_;
  double rate_ = 1, sigma_ = 0;
  uint32_t rounds_ = 0, runs_ = 1, allowed_ = 0;
  std::vector<std::string> names_;
  std::vector<std::optional<privacy::RunBudget>> ledgers_;
  algorithms::AdaptiveClip adaptive_;  // [algorithm * runs + run]
};

}  // namespace fedrt::net
