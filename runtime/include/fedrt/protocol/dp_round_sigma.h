#pragma once
// The noise multiplier a DP-FedAvg round is accounted at (docs/privacy.md):
// central, the configured sigma; distributed, sigma_eff = sqrt(m s2) / Delta
// of the round's plan (privacy/ddg_params.h), which depends on n, the
// devices it samples. A round with no device, or one the plan refuses,
// releases nothing: sigma. Host code (the drivers' accountants).

#include <algorithm>
#include <cmath>
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

// Distributed: whether the group Z_(2^bits) holds the noised sum of a likely
// round, n = min(N, ceil(q N + 6 sqrt(q N) + 1)) sampled devices (written to
// *likely); null, or why not (naming the keys). Every driver checks it
// before the first round; the server checks each round's own n again.
inline const char* DpLikelyRoundFits(const task::Task& task, uint32_t* likely) {
  const double qn = task.participation * task.problem.agents;
  const double n = std::min<double>(task.problem.agents, std::ceil(qn + 6 * std::sqrt(qn) + 1));
  *likely = static_cast<uint32_t>(n);
  if (!task.privacy.distributed) return nullptr;
  const task::PrivacySpec& p = task.privacy;
  privacy::DdgRound r;
  const char* why = privacy::DdgPlan(p.noise_multiplier, p.clip, p.quorum_ppm, p.device_variance, *likely,
                                     task.problem.dim, task.compression.quantizer.bits, r);
  return why != nullptr ? why : privacy::DdgGroupFits(r);
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
