// ServerSession's adaptive clipping (docs/privacy.md, "Adaptive clipping";
// the equations in algorithms/adaptive_clip.h): the clip C_t every
// announcement carries, the members' clip indicators b_i, and after the
// round's noise the geometric step
//   C_{t+1} = C_t exp(-eta_C (btilde - gamma)),
//   btilde = (sum_i (b_i - 1/2) + z sigma_b) / (q N) + 1/2,
// with z the round's last normal draw (after the sum's d), so every driver
// that shares the noise stream moves the clip alike.
#include <cmath>

#include <fmt/format.h>

#include "fedrt/protocol/server_session.h"

namespace fedrt::protocol {

Status ServerSession::init_adaptive_clip(const algorithms::AdaptiveClip& a) {
  adaptive_ = a;
  clip_.clear();
  indicator_.clear();
  if (!adaptive_.on()) return Status::Ok();
  if (!task_.privacy.enabled)
    return Status::InvalidArgument("privacy.adaptive_quantile needs privacy.mechanism = \"central\"");
  if (!(adaptive_.quantile < 1) || !(adaptive_.expected_members > 0) || !(adaptive_.count_noise > 0) ||
      !(adaptive_.noise_multiplier >= 0) || !std::isfinite(adaptive_.noise_multiplier))
    return Status::Invalid(fmt::format("privacy.adaptive_quantile {}: no valid adaptive clipping (count noise {}, "
                                       "noise multiplier of the sum {})",
                                       adaptive_.quantile, adaptive_.count_noise, adaptive_.noise_multiplier));
  if (secure_ || task_.secagg.enabled)
    return Status::InvalidArgument("privacy.adaptive_quantile with secure aggregation is not supported yet: the count "
                                   "would have to travel inside the secure sum");
  clip_.assign(1, task_.privacy.clip);  // C_0
  indicator_.assign(agents_, 0);
  noise_.push_back(0.0);  // the count's draw, after the sum's d
  return Status::Ok();
}

void ServerSession::adapt_clip() {
  uint32_t within = 0;
  for (uint32_t c : commit_.members) within += indicator_[c] == 2 ? 1u : 0u;
  for (uint32_t c : reported_by_) indicator_[c] = 0;
  const double z = noise_[static_cast<size_t>(core_.dim())];
  const double fraction = algorithms::AdaptiveFraction(adaptive_, within, static_cast<double>(commit_.members.size()), z);
  commit_.within_clip = within;
  clip_[0] = algorithms::AdaptiveNextClip(adaptive_, clip_[0], fraction);
}

}  // namespace fedrt::protocol
