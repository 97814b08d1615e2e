// Validation of the secure-aggregation settings of an experiment.
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "fedrt/secagg/protocol.h"
#include "fedrt/config/experiment.h"

namespace fedrt::config {

Status ValidateSecAgg(const ExperimentConfig& c) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  const secagg::SecAggSettings& s = c.secagg;
  if (!s.enabled) {
    if (s.neighbours != 0 || s.dropout != 0.0)
      return bad("compression.secagg_neighbours / secagg_dropout need compression.secure_aggregation = true");
    return Status::Ok();
  }
  const compression::QuantizerSpec& q = c.compression.quantizer;
  if (q.kind != compression::QuantizerKind::kRounding)
    return bad("secure_aggregation needs the shared-scale stochastic rounding quantizer (compression.quantizer = "
               "\"rounding\", public clip and bits): the server can only add integers");
  if (c.problem == task::ProblemKind::kGmm) {
    // FedEM's server keeps V = mean_c V_c from sums alone, with any participation.
    if (s.dropout > 0.0)
      return bad("secure_aggregation for problem gmm needs secagg_dropout = 0: FedEM agents update V_c when they send, "
                 "so a dropped message would leave the server's V behind");
  }
  // Compression memories need no restriction: the server keeps W = sum_c V_c
  // and moves it by alpha times the secure sum of the contributors' messages,
  // exactly what the contributors add to their V_c; a dropped device is no
  // contributor and keeps its V_c (docs/algorithms.md 4).
  if ((task::FamilyOf(c.problem) == task::Family::kOpt) && s.dropout > 0.0)
    for (const std::string& a : c.algorithms)
      if (a.rfind("scaffold", 0) == 0)
        return bad(fmt::format("secure_aggregation with secagg_dropout > 0 cannot run '{}': a Scaffold agent moves its "
                               "c_c during local steps, so a dropped update would break mean_c c_c = c",
                               a));
  const uint64_t agents = static_cast<uint64_t>(c.garnet.agents > 0 ? c.garnet.agents : 0);
  if (c.problem != task::ProblemKind::kBundle && agents < 3)
    return bad(fmt::format("secure_aggregation needs at least 3 agents, got {}", agents));
  const uint64_t top = (uint64_t{1} << q.bits) - 1;
  // One bit of headroom: m honest sums stay below 2^31, so an input shifted
  // to wrap Z_(2^32) lands above their range and the server refuses the
  // round (protocol/server_secagg.h, first_out_of_range; docs/security.md).
  // Distributed DP's integers wrap by design: its bound is 2^32.
  const bool headroom = c.privacy.mechanism != "distributed";
  const double limit = headroom ? 2147483647.0 : 4294967295.0;
  if (static_cast<double>(agents * top) > limit)
    return bad(fmt::format("secure_aggregation: {} agents x {}-bit inputs can wrap Z_(2^32){} (bits + log2 agents = "
                           "{:.2f} > {}, docs/security.md); lower compression.bits to at most {}",
                           agents, q.bits, headroom ? " or leave no bit of headroom below it" : "",
                           q.bits + std::log2(static_cast<double>(agents)), headroom ? 31 : 32,
                           static_cast<int>(std::floor(std::log2(limit / static_cast<double>(agents) + 1.0)))));
  if (s.neighbours != 0 && (s.neighbours < 2 || s.neighbours > secagg::kMaxNeighbours || s.neighbours % 2 != 0))
    return bad(fmt::format("compression.secagg_neighbours must be 0 (automatic) or an even number in [2, {}], got {}",
                           secagg::kMaxNeighbours, s.neighbours));
  if (!(s.dropout >= 0.0 && s.dropout < 1.0))
    return bad(fmt::format("compression.secagg_dropout must be in [0, 1), got {}", s.dropout));
  return Status::Ok();
}

}  // namespace fedrt::config
