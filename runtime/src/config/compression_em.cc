#include "fedrt/config/compression_em.h"

#include <cmath>

#include <fmt/format.h>

#include "fedrt/config/experiment.h"

namespace fedrt::config {

using compression::QuantizerKind;

Result<QuantizerKind> ParseQuantizerKind(const std::string& s) {
  if (s == "none") return QuantizerKind::kNone;
  if (s == "dither") return QuantizerKind::kDither;
  if (s == "rounding") return QuantizerKind::kRounding;
  return Status(StatusCode::kInvalidArgument,
                fmt::format("unknown quantizer '{}' (expected none, dither or rounding)", s));
}

const char* QuantizerKindName(QuantizerKind k) {
  switch (k) {
    case QuantizerKind::kNone: return "none";
    case QuantizerKind::kDither: return "dither";
    case QuantizerKind::kRounding: return "rounding";
  }
  return "?";
}

Status ValidateCompressionEm(const ExperimentConfig& c) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  const CompressionSettings& k = c.compression;
  const compression::QuantizerSpec& q = k.quantizer;
  if (q.kind == QuantizerKind::kDither && (q.levels < 1 || q.levels > compression::kMaxLevels))
    return bad(fmt::format("--levels must be in [1, {}], got {}", compression::kMaxLevels, q.levels));
  if (q.kind == QuantizerKind::kRounding) {
    if (q.bits < 1 || q.bits > compression::kMaxRoundingBits)
      return bad(fmt::format("--bits must be in [1, {}], got {}", compression::kMaxRoundingBits, q.bits));
    if (!(q.clip > 0) || !std::isfinite(q.clip)) return bad(fmt::format("--clip must be a positive number, got {}", q.clip));
  }
  if (!k.enabled() && k.control_variates) return bad("--compress-cv needs --quantizer dither or rounding");
  if (!k.enabled() && k.downlink) return bad("--compress-downlink needs --quantizer dither or rounding");
  // Every family compresses its uplink and its downlink (EM: the statistic Shat_k; the devices
  // compute T(xhat) themselves, docs/algorithms.md 4).
  if (c.problem == task::ProblemKind::kGmm) {
    const GmmSettings& g = c.gmm;
    if (c.garnet.agents <= 0) return bad(fmt::format("--agents must be positive, got {}", c.garnet.agents));
    if (g.components < 1 || g.components > 64) return bad(fmt::format("gmm.components must be in [1, 64], got {}", g.components));
    if (g.data_dim < 1 || g.data_dim > 1024) return bad(fmt::format("gmm.data_dim must be in [1, 1024], got {}", g.data_dim));
    const bool own = c.data.own();  // on shards: p and the points come from the files (checked when read)
    if (!own && g.points < 1) return bad(fmt::format("gmm.points must be positive, got {}", g.points));
    if (!(g.own_weight >= 0 && g.own_weight <= 1)) return bad(fmt::format("gmm.own_weight must be in [0, 1], got {}", g.own_weight));
    if (!(g.separation >= 0) || !std::isfinite(g.separation))
      return bad(fmt::format("gmm.separation must be >= 0, got {}", g.separation));
    if (!(g.em_step > 0 && g.em_step <= 1)) return bad(fmt::format("gmm.em_step (gamma) must be in (0, 1], got {}", g.em_step));
    if (g.inner_iters < 1) return bad(fmt::format("--inner-iters must be positive, got {}", g.inner_iters));
    if (own && g.batch < 0) return bad(fmt::format("--batch must be >= 0 (0 = full local pass), got {}", g.batch));
    if (!own && (g.batch < 0 || g.batch > g.points))
      return bad(fmt::format("--batch must be in [0, gmm.points = {}] (0 = full local pass), got {}", g.points, g.batch));
  }
  return Status::Ok();
}

}  // namespace fedrt::config
