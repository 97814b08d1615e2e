#pragma once
// DP-FedAvg on the fleet (docs/privacy.md, "DP-FedAvg on the fleet";
// docs/privacy-distributed.md, "On the fleet"): what the coordinator adds to
// the shared ServerSession, as fedrt-sim does (runtime/src/sim/pair_runner.cc).
// Central: each (algorithm, run) gets the noise source N(0, 1) of its server
// session, from the OS's cryptographic source, or under privacy.test_seed
// from GaussianNoise::Seeded(test_seed, run, algorithm), the simulator's
// stream, so the fleet's noise is its bits; distributed: the devices draw it.
// A ledger per (algorithm, run) (privacy/run_budget.h) accounts round t at
// sigma_t = protocol::DpRoundSigma(task, n_t), n_t the round's sampled count
// (central: sigma), gives epsilon after every closed round and stops a run
// before a round that would take it past privacy.epsilon_budget. Host code.

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
  // Rounds run `run` may close: T, or fewer under privacy.epsilon_budget
  // (distributed: foreseen from the seed's sampling, whose n sets sigma_t).
  uint32_t rounds_allowed(uint32_t run) const { return allowed_.empty() ? rounds_ : allowed_[run]; }
  // The largest over runs (what the dashboard shows as a run's rounds).
  uint32_t rounds_allowed() const;
  // The rounds of (algorithm, run) a committed state holds, with each one's
  // sampled count n_t, oldest first: the ledger as it was (a restart).
  Status resume(uint32_t algorithm, uint32_t run, const std::vector<uint32_t>& sampled);
  // Whether the ledger of (algorithm, run) lets no further round open.
  bool stopped(uint32_t algorithm, uint32_t run) const;
  // The noise of (algorithm, run)'s session, resumed after `closed` rounds
  // whose noise (`per_round` draws each) a committed state already holds.
  // Distributed: none (the server session adds no noise).
  Noise noise(uint32_t algorithm, uint32_t run, uint32_t closed, size_t per_round) const;
  // Round t (0-based) of (algorithm, run) closed with `sampled` devices
  // sampled: the epsilon spent after it, accounted at DpRoundSigma(task,
  // sampled). Logs it (with adaptive clipping the clip the round used), the
  // warning that a test_seed run is not private (every round), and the
  // budget's stop after the run's last round.
  Result<double> closed(uint32_t algorithm, uint32_t run, uint32_t t, uint32_t sampled, double clip = 0);
  // Adaptive clipping's parameters (config/adaptive_clip.h): off without privacy.adaptive_quantile.
  const algorithms::AdaptiveClip& adaptive() const { return adaptive_; }

 private:
  Result<privacy::RunBudget*> ledger(uint32_t algorithm, uint32_t run);
  bool on_ = false;
  config::PrivacySettings settings_;
  task::Task task_;
  double rate_ = 1;
  uint32_t rounds_ = 0, runs_ = 1;
  std::vector<uint32_t> allowed_;  // [run]
  std::vector<std::string> names_;
  std::vector<std::optional<privacy::RunBudget>> ledgers_;  // [algorithm * runs + run]
  algorithms::AdaptiveClip adaptive_;
};

}  // namespace fedrt::net
