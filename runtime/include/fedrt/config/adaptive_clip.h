#pragma once
// The [privacy] table's adaptive clipping (docs/privacy.md, "Adaptive
// clipping"): from privacy.adaptive_quantile, privacy.noise_multiplier and
// the expected members q N, the parameters of the server's clip update
// (algorithms/adaptive_clip.h). Host code.

#include <cstdint>

#include "fedrt/algorithms/adaptive_clip.h"
#include "fedrt/config/experiment.h"
#include "fedrt/core/status.h"

namespace fedrt::config {

// gamma = adaptive_quantile, eta_C = 0.2, sigma_b = q N / 20,
// sigma_Delta = (sigma^-2 - (2 sigma_b)^-2)^(-1/2); off (quantile 0) without
// the key. Refused, naming the keys, when (2 sigma_b)^-2 >= sigma^-2, with
// secure aggregation, or with a quantile outside (0, 1).
Result<algorithms::AdaptiveClip> AdaptiveClipFor(const PrivacySettings& privacy, double rate, uint32_t agents,
                                                 bool secure_aggregation);

}  // namespace fedrt::config
