#include "fedrt/report/settings_json.h"

#include <algorithm>

#include "fedrt/compression/quantizer.h"
#include "fedrt/config/names.h"
#include "fedrt/secagg/protocol.h"

namespace fedrt::report {

nlohmann::json CompressionJson(const config::CompressionSpec& k, int dim) {
  const compression::QuantizerSpec& q = k.quantizer;
  return {{"quantizer", config::QuantizerName(q.kind)},
          {"levels", q.levels},
          {"elias_gamma", q.elias_gamma},
          {"bits", q.bits},
          {"clip", q.clip},
          {"omega", compression::Omega(q, dim)},
          {"control_variates", k.control_variates},
          {"alpha", k.control_variates ? compression::ControlVariateStep(q, dim) : 0.0},
          {"downlink", k.downlink}};
}

nlohmann::json SecAggJson(const config::SecAggSpec& s, uint32_t agents, uint32_t bits) {
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

}  // namespace fedrt::report
