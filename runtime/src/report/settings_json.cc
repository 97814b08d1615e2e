#include "fedrt/report/settings_json.h"

#include <algorithm>

#include "fedrt/compression/quantizer.h"
#include "fedrt/task/names.h"
#include "fedrt/secagg/protocol.h"

#include <fmt/format.h>

namespace fedrt::report {

nlohmann::json CompressionJson(const task::CompressionSpec& k, int dim) {
  const compression::QuantizerSpec& q = k.quantizer;
  return {{"quantizer", task::QuantizerName(q.kind)},
          {"levels", q.levels},
          {"elias_gamma", q.elias_gamma},
          {"bits", q.bits},
          {"clip", q.clip},
          {"omega", compression::Omega(q, dim)},
          {"control_variates", k.control_variates},
          {"alpha", k.control_variates ? compression::ControlVariateStep(q, dim) : 0.0},
          {"downlink", k.downlink}};
}

nlohmann::json SecAggJson(const task::SecAggSpec& s, uint32_t agents, uint32_t bits) {
  uint32_t k = 0, t = 0;
  const double design = std::max(0.2, s.dropout);
  secagg::DefaultGraph(agents, k, t, design);
  if (s.neighbours > 0 && s.neighbours < k) {
    k = s.neighbours;
    t = (k + 1) / 2 + 1;
  }
  return {{"protocol", "SecAgg+ (X25519, HKDF-SHA256, ChaCha20 masks in Z_(2^32), Shamir over GF(2^8))"},
          {"neighbours_at_full_participation", k},
          {"threshold_at_full_participation", t},
          {"design_dropout", design},
          {"unmask_failure_bound", secagg::UnmaskFailureBound(agents, k, t, design)},
          {"simulated_dropout", s.dropout},
          {"bits", bits},
          {"aggregation", "integer sum of the b-bit payloads, dequantized once (same as without secure aggregation)"}};
}

nlohmann::json SyntheticSettingsJson(const task::SyntheticSpec& syn) {
  return {{"heterogeneity",
           fmt::format("covariate {}, concept {}, quantity {}", syn.covariate_shift, syn.concept_shift, syn.quantity_skew)},
          {"covariate_shift", syn.covariate_shift},
          {"concept_shift", syn.concept_shift},
          {"quantity_skew", syn.quantity_skew},
          {"samples", syn.samples},
          {"noise", syn.noise}};
}

nlohmann::json OptSettingsJson(const task::Task& t, double l2, const char* aggregation) {
  const uint32_t batch = t.hyper.batch;
  nlohmann::json j = {{"batch", batch},
                      {"gradients", batch == 0 ? "full" : fmt::format("mini-batch of {} (with replacement)", batch)},
                      {"prox_mu", t.hyper.prox_mu},
                      {"server_step", t.hyper.server_step},
                      {"rr_burn_in", t.hyper.burn_in},
                      {"l2", l2},
                      {"aggregation", aggregation},
                      {"payload", "raw float64: d values per message (2d for Scaffold), framing not counted"},
                      {"initial_iterate", "x_0 = 0"}};
  if (t.compression.enabled())
    j["payload"] = "encoded bytes of the compressed update (dx, and dc for Scaffold, one vector; bits = 8 * bytes)";
  return j;
}

}  // namespace fedrt::report
