#pragma once
// DP-FedAvg's guarantee in summary.json (docs/privacy.md): per algorithm
// mechanism, epsilon (the largest over runs, classic conversion), delta,
// noise_multiplier (distributed: also effective_noise_multiplier, quorum,
// device_variance), clip, private (false under privacy.test_seed), the
// epsilon_budget when set and privacy_stop, why runs ended early. Every
// driver (fedrt-sim, fedrt-coordinator) writes them with this one function.
// Host code.

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fedrt/config/experiment.h"

namespace fedrt::report {

// `stops`: one line per run the budget ended early ("run r: stopped after ...");
// effective_noise: distributed, the smallest multiplier a round was accounted at.
void AddPrivacySummary(const config::PrivacySettings& privacy, double epsilon, const std::vector<std::string>& stops,
                       nlohmann::json& extra, double effective_noise = HUGE_VAL);
// Adaptive clipping: adaptive_quantile and final_clip, per run the clip
// C_T after the run's last round (what a next round would use).
void AddAdaptiveClipSummary(const config::PrivacySettings& privacy, const std::vector<double>& final_clips,
                            nlohmann::json& extra);

}  // namespace fedrt::report
