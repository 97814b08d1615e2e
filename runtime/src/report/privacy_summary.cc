#include "fedrt/report/privacy_summary.h"

namespace fedrt::report {

void AddPrivacySummary(const config::PrivacySettings& privacy, double epsilon, const std::vector<std::string>& stops,
                       nlohmann::json& extra) {
  extra["mechanism"] = privacy.mechanism;
  extra["epsilon"] = epsilon;
  extra["delta"] = privacy.delta;
  extra["noise_multiplier"] = privacy.noise_multiplier;
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
