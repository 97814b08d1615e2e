#pragma once
// Conditional randomized rounding of the distributed mechanism
// (docs/privacy-distributed.md, "Distributed DP under SecAgg+"): each coordinate of y
// goes to floor(y_i) + 1 with probability y_i - floor(y_i), else to
// floor(y_i) (unbiased), and the whole vector is drawn again until its
// squared L2 norm, an exact integer, is at most the bound Delta^2. The bound
// is what the accountant takes as the sensitivity; the retries change the
// law only on the rare vectors above it. Device code: header-only, caller
// buffers, no heap.

#include <cmath>
#include <cstdint>

#include "fedrt/core/status.h"

namespace fedrt::privacy {

constexpr uint32_t kMaxRoundingTries = 100;

// out[i] = floor(y[i]) + Bernoulli(frac(y[i])), redrawn (at most `tries`
// times) until sum_i out[i]^2 <= bound_sq; every |y[i]| < 2^30 and
// bound_sq < 2^62 (the caller's parameters: privacy/ddg_params.h), so the sum,
// stopped as soon as it passes the bound, stays in int64. The uniforms are
// 53-bit doubles from `bits` (next_u64).
template <class Bits>
inline Status ConditionalRound(const double* y, uint32_t n, uint64_t bound_sq, Bits& bits, int32_t* out,
                               uint32_t tries = kMaxRoundingTries) {
  for (uint32_t attempt = 0; attempt < tries; ++attempt) {
    uint64_t norm_sq = 0;
    bool within = true;
    for (uint32_t i = 0; i < n; ++i) {
      const double f = std::floor(y[i]);
      const double u = static_cast<double>(bits.next_u64() >> 11) * 0x1.0p-53;
      const int64_t r = static_cast<int64_t>(f) + (u < y[i] - f ? 1 : 0);
      out[i] = static_cast<int32_t>(r);
      if (within) {
        norm_sq += static_cast<uint64_t>(r * r);
        within = norm_sq <= bound_sq;
      }
    }
    if (within) return Status::Ok();
  }
  return Status::ResourceExhausted("distributed DP: the rounded update stayed above its norm bound after every retry");
}

}  // namespace fedrt::privacy
