#pragma once
// The randomized Hadamard rotation of the distributed mechanism
// (docs/privacy-distributed.md, "Distributed DP under SecAgg+"): x of dimension d is
// padded with zeros to d_pad = the next power of two, multiplied by random
// signs D (from a PUBLIC seed, so the server inverts it) and by the
// normalised Walsh-Hadamard matrix H / sqrt(d_pad). The rotation is
// orthogonal, so it keeps the L2 norm, and it spreads a vector's norm evenly
// over the coordinates, so rounding and the group's modulus see no large
// coordinate. Device code: header-only, caller buffers, no heap.

#include <cmath>
#include <cstdint>

#include "fedrt/core/rng.h"

namespace fedrt::privacy {

// The next power of two >= d (d >= 1, d <= 2^31).
constexpr uint32_t PaddedDim(uint32_t d) {
  uint32_t p = 1;
  while (p < d) p <<= 1;
  return p;
}

// Sign i of D: bit i % 64 of draw i / 64 of the counter stream `seed`.
inline bool RotationSignNegative(uint64_t seed, uint32_t i) {
  CounterRng rng(seed, i / 64);
  return ((rng.next_u64() >> (i % 64)) & 1u) != 0;
}

// In place: v <- H v / sqrt(n), n a power of two (H the Walsh-Hadamard
// matrix of +-1 entries, H H = n I).
inline void NormalisedHadamard(double* v, uint32_t n) {
  for (uint32_t h = 1; h < n; h <<= 1)
    for (uint32_t i = 0; i < n; i += 2 * h)
      for (uint32_t j = i; j < i + h; ++j) {
        const double a = v[j], b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
  const double s = 1.0 / std::sqrt(static_cast<double>(n));
  for (uint32_t i = 0; i < n; ++i) v[i] *= s;
}

// out[0..d_pad) = H D (x, 0) / sqrt(d_pad), x of d values.
template <class S>
inline void Rotate(const S* x, uint32_t d, uint32_t d_pad, uint64_t seed, double* out) {
  for (uint32_t i = 0; i < d_pad; ++i) {
    const double v = i < d ? static_cast<double>(x[i]) : 0.0;
    out[i] = RotationSignNegative(seed, i) ? -v : v;
  }
  NormalisedHadamard(out, d_pad);
}

// The inverse, in place on z[0..d_pad): z <- D H z / sqrt(d_pad); the first
// d entries are the vector, the rest the padding.
inline void Unrotate(double* z, uint32_t d_pad, uint64_t seed) {
  NormalisedHadamard(z, d_pad);
  for (uint32_t i = 0; i < d_pad; ++i)
    if (RotationSignNegative(seed, i)) z[i] = -z[i];
}

}  // namespace fedrt::privacy
