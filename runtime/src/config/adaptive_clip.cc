// Adaptive clipping's parameters from the [privacy] table (docs/privacy.md,
// "Adaptive clipping"), each refusal naming the keys.
#include "fedrt/config/adaptive_clip.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace fedrt::config {

Result<algorithms::AdaptiveClip> AdaptiveClipFor(const PrivacySettings& p, double rate, uint32_t agents,
                                                 bool secure_aggregation) {
  algorithms::AdaptiveClip a;
  if (!p.adaptive_quantile || !p.on()) return a;
  const double gamma = *p.adaptive_quantile;
  if (!(gamma > 0 && gamma < 1))
    return Status::Invalid(fmt::format("privacy.adaptive_quantile must be in (0, 1), got {}", gamma));
  if (p.mechanism != "central" || secure_aggregation)
    return Status::Invalid(
        "privacy.adaptive_quantile with privacy.mechanism = \"distributed\" or compression.secure_aggregation is "
        "not supported yet: the count would have to travel inside the secure sum; use mechanism = \"central\"");
  const double members = rate * static_cast<double>(agents);
  a.quantile = gamma;
  a.expected_members = members;
  a.count_noise = algorithms::AdaptiveCountNoise(members);
  a.noise_multiplier = algorithms::AdaptiveSumNoiseMultiplier(p.noise_multiplier, a.count_noise);
  if (!(a.noise_multiplier >= 0) || !(a.count_noise > 0))
    return Status::Invalid(fmt::format(
        "privacy.noise_multiplier {} is too small for privacy.adaptive_quantile: the clip count's noise sigma_b = "
        "participation.rate x problem.agents / 20 = {:.6g} takes (2 sigma_b)^-2 = {:.6g} of sigma^-2 = {:.6g}, and "
        "the update sum would need the rest; raise privacy.noise_multiplier above 2 sigma_b = {:.6g}, or the "
        "expected participants (participation.rate x problem.agents) above 10 x privacy.noise_multiplier",
        p.noise_multiplier, a.count_noise, 1.0 / (4.0 * a.count_noise * a.count_noise),
        1.0 / (p.noise_multiplier * p.noise_multiplier), 2.0 * a.count_noise));
  return a;
}

}  // namespace fedrt::config
