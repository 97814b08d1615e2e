#pragma once
// The Gaussian noise of central DP-FedAvg (docs/privacy.md, "DP-FedAvg in the
// simulator"): standard normal draws by Box-Muller from 53-bit uniforms,
// the bits from the operating system's cryptographic source (getrandom), or,
// for tests only, from a counter-based stream keyed by a seed (reproducible,
// and therefore not private). Host code.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::privacy {

class GaussianNoise {
 public:
  // Bits from getrandom(2): what a private run uses.
  static GaussianNoise Cryptographic();
  // Bits from CounterRng keyed by (seed, run, algorithm): the same draws in
  // every driver, and no privacy (privacy.test_seed).
  static GaussianNoise Seeded(uint64_t seed, uint64_t run, uint64_t algorithm);

  // n independent N(0, 1) draws; fails only when the OS source does.
  Status Fill(double* out, size_t n);
  bool seeded() const { return seeded_; }

 private:
  Status Bits(uint64_t* out, size_t n);

  bool seeded_ = false;
  CounterRng rng_{0};
  std::vector<uint64_t> bits_;
};

}  // namespace fedrt::privacy
