// Validation of the [privacy] table (docs/privacy.md, "DP-FedAvg in the
// simulator"): ranges, then what DP-FedAvg cannot run with, each message
// naming the key and saying why.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "fedrt/config/adaptive_clip.h"
#include "fedrt/config/experiment.h"

namespace fedrt::config {

Status ValidatePrivacy(const ExperimentConfig& c) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  const PrivacySettings& p = c.privacy;
  if (p.mechanism != "none" && p.mechanism != "central" && p.mechanism != "distributed")
    return bad(fmt::format("privacy.mechanism must be \"none\", \"central\" or \"distributed\", got \"{}\"", p.mechanism));
  if (!(p.clip > 0) || !std::isfinite(p.clip)) return bad(fmt::format("privacy.clip must be > 0, got {}", p.clip));
  if (!(p.noise_multiplier >= 0) || !std::isfinite(p.noise_multiplier))
    return bad(fmt::format("privacy.noise_multiplier must be >= 0, got {}", p.noise_multiplier));
  if (!(p.delta > 0 && p.delta < 1)) return bad(fmt::format("privacy.delta must be in (0, 1), got {}", p.delta));
  if (p.epsilon_budget && !(*p.epsilon_budget > 0))
    return bad(fmt::format("privacy.epsilon_budget must be > 0, got {}", *p.epsilon_budget));
  if (p.adaptive_quantile && !(*p.adaptive_quantile > 0 && *p.adaptive_quantile < 1))
    return bad(fmt::format("privacy.adaptive_quantile must be in (0, 1), got {}", *p.adaptive_quantile));
  if (!p.on()) return Status::Ok();
  if (p.mechanism == "distributed" && !c.secagg.enabled)
    return bad("privacy.mechanism = \"distributed\" needs compression.secure_aggregation = true: the devices share "
               "the noise, which protects only a sum the server never sees unmasked");
  const std::string mech = fmt::format("privacy.mechanism = \"{}\"", p.mechanism);
  if (p.mechanism == "distributed") {  // docs/privacy-distributed.md, "Distributed DP under SecAgg+"
    if (!(p.noise_multiplier > 0))
      return bad("privacy.noise_multiplier must be > 0 with privacy.mechanism = \"distributed\": the devices' grid "
                 "step is gamma = noise_multiplier x clip / sqrt(m x device_variance)");
    if (!(p.quorum >= 1e-6 && p.quorum <= 1))  // the task carries it in millionths
      return bad(fmt::format("privacy.quorum must be in (0, 1] (at least 1e-6), got {}", p.quorum));
    if (p.device_variance < 1 || p.device_variance > (1u << 24))
      return bad(fmt::format("privacy.device_variance must be in 1..16777216 (2^24), got {}", p.device_variance));
    if (c.compression.quantizer.kind != compression::QuantizerKind::kRounding)
      return bad("privacy.mechanism = \"distributed\" needs compression.quantizer = \"rounding\": its "
                 "compression.bits set the SecAgg+ group Z_(2^bits) the noised integers are summed in (the "
                 "mechanism does its own rounding; compression.clip is not used)");
    if (c.compression.control_variates)
      return bad("privacy.mechanism = \"distributed\" with compression.control_variates is not supported: the "
                 "compression memory would carry each device's unnoised update from round to round");
  } else if (p.quorum != 0.8 || p.device_variance != (1u << 16)) {
    return bad(fmt::format("privacy.quorum and privacy.device_variance are for privacy.mechanism = \"distributed\", "
                           "not \"{}\"",
                           p.mechanism));
  }
  if (auto a = AdaptiveClipFor(p, c.participation, c.garnet.agents, c.secagg.enabled); !a.ok()) return a.status();
  if (task::FamilyOf(c.problem) != task::Family::kOpt)
    return bad(mech + " needs FedAvg or FedProx (problem lsq, logistic, softmax or a user "
               "model): the LSA family (FedLSA, SCAFFLSA) and FedEM send updates whose clipping DP-FedAvg does not "
               "cover (SCAFFLSA's control variates and FedEM's memories are further releases)");
  for (const std::string& a : c.algorithms) {
    if (a.rfind("scaffold", 0) == 0)
      return bad(fmt::format("{} cannot run '{}': Scaffold's control-variate update is "
                             "a second release of each device's data, which DP-FedAvg does not account for; use "
                             "fedavg or fedprox",
                             mech, a));
    if (a.size() > 3 && a.compare(a.size() - 3, 3, "-rr") == 0)
      return bad(fmt::format("{} cannot run '{}': Richardson-Romberg runs two chains, "
                             "two releases per round, which DP-FedAvg does not account for; use fedavg or fedprox",
                             mech, a));
    if (a == "fedprox-exact")
      return bad(mech + " cannot run 'fedprox-exact' yet: use fedprox (H local steps)");
  }
  if (p.mechanism == "central" && c.compression.quantizer.kind != compression::QuantizerKind::kNone)
    return bad("privacy.mechanism = \"central\" with compression.quantizer is not supported: a quantized update "
               "can exceed the clip norm, which the guarantee needs");
  return Status::Ok();
}

}  // namespace fedrt::config
