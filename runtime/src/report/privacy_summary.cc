#include "fedrt/report/privacy_summary.h"

#include <cmath>

namespace fedrt::report {

void AddPrivacySummary(const config::PrivacySettings& privacy, double epsilon, const std::vector<std::string>& stops,
                       nlohmann::json& extra, double effective_noise) {
  extra["mechanism"] = privacy.mechanism;
  extra["epsilon"] = epsilon;
  extra["delta"] = privacy.delta;
  extra["noise_multiplier"] = privacy.noise_multiplier;
  if (privacy.mechanism == "distributed") {  // what the rounds were accounted at: rounding widens the sensitivity
    if (effective_noise < HUGE_VAL) extra["effective_noise_multiplier"] = effective_noise;
    extra["quorum"] = privacy.quorum;
    extra["device_variance"] = privacy.device_variance;
  }
  extra["clip"] = privacy.clip;
  extra["private"] = !privacy.test_seed.has_value();
  if (privacy.epsilon_budget) extra["epsilon_budget"] = *privacy.epsilon_budget;
  if (!stops.empty()) extra["privacy_stop"] = stops;
}

void AddAdaptiveClipSummary(const config::PrivacySettings& privacy, const std::vector<double>& final_clips,
                            nlohmann::json& extra) {
  if (!privacy.adaptive_quantile) return;
  extra["adaptive_quantile"] = *privacy.adaptive_quantile;
  extra["final_clip"] = final_clips;
}

}  // namespace fedrt::report
