#pragma once
// The noise multiplier a DP-FedAvg round is accounted at (docs/privacy.md):
// central, the configured sigma; distributed, sigma_eff = sqrt(m s2) / Delta
// of the round's plan (privacy/ddg_params.h), which depends on n, the
// devices it samples. A round with no device, or one the plan refuses,
// releases nothing: sigma. Host code (the drivers' accountants).

#include <cstdint>

#include "fedrt/algorithms/lsa.h"  // IsSampled
#include "fedrt/privacy/ddg_params.h"
#include "fedrt/task/task.h"

namespace fedrt::protocol {

// sigma of a round of n sampled devices.
inline double DpRoundSigma(const task::Task& task, uint32_t n) {
  const task::PrivacySpec& p = task.privacy;
  if (!p.distributed || n == 0) return p.noise_multiplier;
  privacy::DdgRound r;
  if (privacy::DdgPlan(p.noise_multiplier, p.clip, p.quorum_ppm, p.device_variance, n, task.problem.dim,
                       task.compression.quantizer.bits, r) != nullptr)
    return p.noise_multiplier;
  return privacy::DdgEffectiveNoise(r);
}

// n of round t of run `run` as the seed samples it (every agent taking part).
inline uint32_t SampledBySeed(const task::Task& task, uint32_t run, uint32_t round) {
  uint32_t n = 0;
  for (uint32_t c = 0; c < task.problem.agents; ++c)
    n += algorithms::IsSampled(task.seed, run, c, round, task.participation) ? 1u : 0u;
  return n;
}

// sigma of round t of run `run` foreseen from the seed's sampling.
inline double DpForeseenSigma(const task::Task& task, uint32_t run, uint32_t round) {
  return task.privacy.distributed ? DpRoundSigma(task, SampledBySeed(task, run, round)) : task.privacy.noise_multiplier;
}

}  // namespace fedrt::protocol
