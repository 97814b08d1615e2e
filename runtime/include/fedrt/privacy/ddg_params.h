#pragma once
// One round's parameters of the distributed discrete Gaussian mechanism
// (DDGauss, Kairouz, Liu and Steinke 2021; docs/privacy-distributed.md, "Distributed DP
// under SecAgg+"), computed identically by every device and the server from
// the task (sigma, clip, quorum, s2, the group's bits) and the round's n
// sampled devices:
//   m      = ceil(quorum n)              devices that must survive the round
//            (quorum in millionths: integers only, the same m everywhere)
//   gamma  = sigma clip / sqrt(m s2)     the integer grid's step
//   Delta^2 = min((c + sqrt(d_pad))^2, c^2 + d_pad/4 + c + sqrt(d_pad)/2),
//             c = clip / gamma           the rounded vector's norm bound
//             (beta = exp(-1/2), so sqrt(2 ln(1/beta)) = 1)
// Any m or more survivors each add N_Z(0, s2) per coordinate: variance at
// least m s2 = sigma^2 clip^2 / gamma^2 integer units, sigma^2 clip^2 once
// scaled back by gamma. Device code: header-only, no heap.

#include <cmath>
#include <cstdint>

#include "fedrt/privacy/discrete_gaussian.h"
#include "fedrt/privacy/hadamard_rotation.h"

namespace fedrt::privacy {

struct DdgRound {
  uint32_t n = 0;      // devices sampled this round
  uint32_t m = 0;      // ceil(quorum n): the survivors the noise needs
  uint32_t d = 0;      // the update's dimension
  uint32_t d_pad = 0;  // the next power of two
  uint32_t bits = 0;   // the SecAgg+ group Z_(2^bits)
  uint32_t s2 = 0;     // each device's integer noise variance
  double gamma = 0;    // grid step: real value = gamma * integer
  double c = 0;        // clip / gamma
  double delta = 0;    // sqrt(bound_sq)
  uint64_t bound_sq = 0;  // floor(Delta^2): the rounded vector's squared norm bound
};

// m = ceil(quorum_ppm n / 10^6), at least 1 for n >= 1 (quorum_ppm in 1..10^6).
inline uint32_t DdgQuorumCount(uint32_t quorum_ppm, uint32_t n) {
  const uint64_t m = (static_cast<uint64_t>(quorum_ppm) * n + 999999u) / 1000000u;
  return n == 0 ? 0u : (m < 1 ? 1u : (m > n ? n : static_cast<uint32_t>(m)));
}

// Fills `r` for a round of n >= 1 sampled devices; returns what is wrong
// (naming the experiment keys to change) or nullptr.
inline const char* DdgPlan(double sigma, double clip, uint32_t quorum_ppm, uint32_t s2, uint32_t n, uint32_t d,
                           uint32_t bits, DdgRound& r) {
  if (!(sigma > 0) || !(clip > 0) || quorum_ppm == 0 || quorum_ppm > 1000000u || n == 0 || d == 0 || d > (1u << 30))
    return "distributed DP: privacy.noise_multiplier and privacy.clip must be > 0, privacy.quorum in (0, 1]";
  if (s2 < 1 || s2 > kMaxDiscreteGaussianVariance) return "distributed DP: privacy.device_variance outside 1..2^24";
  if (bits < 2 || bits > 31) return "distributed DP: compression.bits outside 2..31";
  r.n = n;
  r.m = DdgQuorumCount(quorum_ppm, n);
  r.d = d;
  r.d_pad = PaddedDim(d);
  r.bits = bits;
  r.s2 = s2;
  r.gamma = sigma * clip / std::sqrt(static_cast<double>(r.m) * s2);
  r.c = clip / r.gamma;
  const double root = std::sqrt(static_cast<double>(r.d_pad));
  const double a = (r.c + root) * (r.c + root);
  const double b = r.c * r.c + r.d_pad / 4.0 + r.c + root / 2.0;
  const double bound = a < b ? a : b;
  // |y_i| <= c (+ float slack) < 2^30 and Delta^2 < 2^62 keep the rounding's integers in range.
  if (!(r.c < 0x1.0p29) || !(bound < 0x1.0p62))
    return "distributed DP: clip / gamma = sqrt(m s2) / sigma is too large for 32-bit integers: lower "
           "privacy.device_variance or raise privacy.noise_multiplier";
  r.bound_sq = static_cast<uint64_t>(std::floor(bound));
  r.delta = std::sqrt(static_cast<double>(r.bound_sq));
  return nullptr;
}

// The noise multiplier the accountant takes for such a round: the integer
// sum's noise std sqrt(m s2) over its sensitivity Delta (<= sigma: rounding
// widens the sensitivity from c to Delta).
inline double DdgEffectiveNoise(const DdgRound& r) {
  return std::sqrt(static_cast<double>(r.m) * r.s2) / r.delta;
}

// Whether the sum of n devices' values stays inside (-2^(b-1), 2^(b-1))
// with probability >= 1 - 1e-9 per round: after the rotation every
// coordinate of the sum is sub-Gaussian with variance proxy at most
// n^2 Delta^2 / d_pad (the sum's norm is at most n Delta) plus the noise's
// n s2, so a union bound over d_pad coordinates asks k sqrt(v) < 2^(b-1),
// k = sqrt(2 ln(2 d_pad 10^9)). SecAgg+ itself needs n (2^b - 1) < 2^32.
inline const char* DdgGroupFits(const DdgRound& r) {
  const double n = r.n;
  const double v = n * n * static_cast<double>(r.bound_sq) / r.d_pad + n * r.s2;
  const double k = std::sqrt(2.0 * std::log(2.0 * r.d_pad * 1e9));
  if (!(k * std::sqrt(v) < std::ldexp(1.0, static_cast<int>(r.bits) - 1)))
    return "distributed DP: the devices' sum would wrap around the SecAgg+ group: raise compression.bits, or lower "
           "privacy.device_variance or the sampled devices (participation.rate x problem.agents)";
  if (!(n * (std::ldexp(1.0, static_cast<int>(r.bits)) - 1) < 0x1.0p32))
    return "distributed DP: n (2^bits - 1) must stay below 2^32 for SecAgg+: lower compression.bits or the sampled "
           "devices (participation.rate x problem.agents)";
  return nullptr;
}

// The extra term tau of DDGauss's analysis: a sum of m independent
// N_Z(0, s2) is not exactly a discrete Gaussian, and its guarantee is the
// Gaussian's plus a term of order tau d_pad, tau = 10 sum_{k=1}^{m-1}
// exp(-2 pi^2 s2 k / (k + 1)) <= 10 (m - 1) exp(-pi^2 s2).
inline double DdgTau(uint32_t m, uint32_t s2) {
  const double pi2 = 9.869604401089358;
  return 10.0 * (m > 0 ? m - 1 : 0) * std::exp(-pi2 * s2);
}

}  // namespace fedrt::privacy
