// Standard normal draws for DP-FedAvg's noise (privacy/gaussian_noise.h).
#include "fedrt/privacy/gaussian_noise.h"

#include <sys/random.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace fedrt::privacy {

GaussianNoise GaussianNoise::Cryptographic() { return GaussianNoise(); }

GaussianNoise GaussianNoise::Seeded(uint64_t seed, uint64_t run, uint64_t algorithm) {
  GaussianNoise g;
  g.seeded_ = true;
  g.rng_ = CounterRng(seed, run, algorithm, 0, RngStream::kPrivacyTest);
  return g;
}

Status GaussianNoise::Bits(uint64_t* out, size_t n) {
  if (seeded_) {
    for (size_t i = 0; i < n; ++i) out[i] = rng_.next_u64();
    return Status::Ok();
  }
  auto* p = reinterpret_cast<unsigned char*>(out);
  size_t left = n * sizeof(uint64_t);
  while (left > 0) {
    const ssize_t got = getrandom(p, left, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kInternal, fmt::format("privacy: getrandom failed: {}", std::strerror(errno)));
    }
    p += got;
    left -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

// Box-Muller: u1 in (0, 1] (never log 0), u2 in [0, 1), each with 53 random
// bits; one pair of uniforms gives two independent normals.
Status GaussianNoise::Fill(double* out, size_t n) {
  const size_t pairs = (n + 1) / 2;
  bits_.resize(2 * pairs);
  FEDRT_TRY(Bits(bits_.data(), bits_.size()));
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (size_t k = 0; k < pairs; ++k) {
    const double u1 = static_cast<double>((bits_[2 * k] >> 11) + 1) * 0x1.0p-53;
    const double u2 = static_cast<double>(bits_[2 * k + 1] >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[2 * k] = r * std::cos(kTwoPi * u2);
    if (2 * k + 1 < n) out[2 * k + 1] = r * std::sin(kTwoPi * u2);
  }
  return Status::Ok();
}

}  // namespace fedrt::privacy
