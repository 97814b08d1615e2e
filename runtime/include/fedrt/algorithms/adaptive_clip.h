#pragma once
// Adaptive clipping for central DP-FedAvg (docs/privacy.md, "Adaptive
// clipping"; Andrew, Thakkar, McMahan and Ramaswamy 2021): the clip C_t of
// round t follows the gamma-quantile of the devices' update norms. Each
// member reports b_i = 1[||dx_i|| <= C_t]; the server releases the centred
// count sum_i (b_i - 1/2) with noise N(0, sigma_b^2) and moves the clip
// geometrically. The pure equations, shared by the experiment's checks and
// the server session. No I/O, heap or exceptions.

#include <cmath>

namespace fedrt::algorithms {

struct AdaptiveClip {
  double quantile = 0;           // gamma in (0, 1); 0: adaptive clipping is off
  double learning_rate = 0.2;    // eta_C of the geometric update
  double count_noise = 0;        // sigma_b = q N / 20 (expected members / 20)
  double noise_multiplier = 0;   // sigma_Delta: the update sum's noise is N(0, sigma_Delta^2 C_t^2)
  double expected_members = 1;   // q N: the fixed denominator
  bool on() const { return quantile > 0; }
};

// sigma_b = q N / 20: the count noise of Andrew et al. (expected members / 20).
inline double AdaptiveCountNoise(double expected_members) { return expected_members / 20.0; }

// sigma_Delta = (sigma^-2 - (2 sigma_b)^-2)^(-1/2): the sum's noise multiplier
// such that (sum, centred count) together are one Gaussian mechanism of noise
// multiplier sigma. Negative when (2 sigma_b)^-2 >= sigma^-2 (no split
// exists); 0 for sigma = 0.
inline double AdaptiveSumNoiseMultiplier(double sigma, double count_noise) {
  if (sigma == 0) return 0;
  const double rest = 1.0 / (sigma * sigma) - 1.0 / (4.0 * count_noise * count_noise);
  return rest > 0 ? 1.0 / std::sqrt(rest) : -1.0;
}

// btilde = (sum_i (b_i - 1/2) + z sigma_b) / (q N) + 1/2, z ~ N(0, 1):
// the noisy fraction of members whose update was within the clip.
inline double AdaptiveFraction(const AdaptiveClip& a, double within, double members, double z) {
  return (within - 0.5 * members + z * a.count_noise) / a.expected_members + 0.5;
}

// C_{t+1} = C_t exp(-eta_C (btilde - gamma)).
inline double AdaptiveNextClip(const AdaptiveClip& a, double clip, double fraction) {
  return clip * std::exp(-a.learning_rate * (fraction - a.quantile));
}

}  // namespace fedrt::algorithms
