#pragma once
// summary.json descriptions of the task's compression and secure aggregation
// (docs/algorithms.md 4): the same text whichever driver ran. Host code.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "fedrt/task/task.h"

namespace fedrt::report {

// The uplink codec for a `dim`-vector (omega and alpha = 1/(1+omega) depend on it).
nlohmann::json CompressionJson(const task::CompressionSpec& c, int dim);
// SecAgg+ at full participation of `agents`: neighbours, threshold, failure bound.
nlohmann::json SecAggJson(const task::SecAggSpec& s, uint32_t agents, uint32_t bits);
// The optimisation family's settings (batch, prox_mu, server step, l2,
// aggregation, payload, x_0), with the codec's payload text when compressed.
nlohmann::json OptSettingsJson(const task::Task& t, double l2, const char* aggregation);
// A generated problem's heterogeneity (covariate, concept and quantity shift), samples and noise.
nlohmann::json SyntheticSettingsJson(const task::SyntheticSpec& syn);

}  // namespace fedrt::report
