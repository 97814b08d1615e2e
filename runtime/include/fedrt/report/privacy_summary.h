#pragma once
// DP-FedAvg's guarantee in summary.json (docs/privacy.md): per algorithm
// mechanism, epsilon (the largest over runs, classic conversion), delta,
// noise_multiplier, clip, private (false under privacy.test_seed), the
// epsilon_budget when set and privacy_stop, why runs ended early. Every
// driver (fedrt-sim, fedrt-coordinator) writes them with this one function.
// Host code.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fedrt/config/experiment.h"

namespace fedrt::report {

// `stops`: one line per run the budget ended early ("run r: stopped after ...").
void AddPrivacySummary(const config::PrivacySettings& privacy, double epsilon, const std::vector<std::string>& stops,
                       nlohmann::json& extra);
// Adaptive clipping: adaptive_quantile and final_clip, per run the clip
// C_T after the run's last round (what a next round would use).
void AddAdaptiveClipSummary(const config::PrivacySettings& privacy, const std::vector<double>& final_clips,
                            nlohmann::json& extra);

}  // namespace fedrt::report
