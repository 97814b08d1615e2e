#pragma once
// The exact discrete Gaussian sampler of the distributed mechanism
// (docs/privacy-distributed.md, "Distributed DP under SecAgg+"): N_Z(0, s2), the law
// P[X = x] proportional to exp(-x^2 / (2 s2)) on the integers, for an
// integer variance parameter s2 in [1, 2^24], by the rejection sampler of
// Canonne, Kamath and Steinke (2020): a discrete Laplace proposal of scale
// t = floor(sqrt(s2)) + 1 accepted with probability
// exp(-(|Y| - s2/t)^2 / (2 s2)), every Bernoulli(exp(-gamma)) drawn by their
// exact algorithm on rationals, every uniform integer by rejection. Only
// integers: no floating point, so a Cortex-M draws the same values as a host
// from the same bits. Device code: header-only, no heap, no exceptions.
//
// Bits: any type with `uint64_t next_u64()` giving independent uniform words.
//
// Why every product fits in uint64 (asserted below): t <= 2^12 + 1, and the
// proposal is resampled when |Y| > 40 t (kTailCap), so
//   den = 2 s2 t^2          <= 2 * 2^24 * (2^12 + 1)^2 < 2^49.01,
//   |t |Y| - s2| <= 40 t^2  <  40 * 2^24.01            < 2^29.34, squared < 2^58.7,
// and a Bernoulli(r / (den K)) needs den K < 2^63: K < 2^12 (kMaxK). K
// reaches k only with probability below 1/(k-1)! (1/4095! here), and a
// proposal beyond 40 t is one the discrete Gaussian would keep with mass
// below exp(-800): the truncation changes no probability a double can hold.

#include <cstdint>

namespace fedrt::privacy {

constexpr uint32_t kMaxDiscreteGaussianVariance = 1u << 24;
constexpr uint64_t kTailCap = 40;   // proposals beyond kTailCap * t are resampled
constexpr uint64_t kMaxK = 1u << 12;

static_assert(2ull * kMaxDiscreteGaussianVariance * ((1ull << 12) + 1) * ((1ull << 12) + 1) < (1ull << 50),
              "den = 2 s2 t^2 must stay below 2^50");
static_assert(((1ull << 50) * kMaxK) < (1ull << 63), "den K must stay below 2^63");
static_assert(kTailCap * ((1ull << 12) + 1) * ((1ull << 12) + 1) < (1ull << 30),
              "t |Y| and s2 must stay below 2^30, so that (t |Y| - s2)^2 < 2^60");

// Uniform integer in [0, n), n >= 1, by rejection: a word below 2^64 mod n
// would favour the small residues, so it is drawn again (unbiased).
template <class Bits>
inline uint64_t UniformBelow(Bits& bits, uint64_t n) {
  const uint64_t reject = (0 - n) % n;  // 2^64 mod n
  for (;;) {
    const uint64_t x = bits.next_u64();
    if (x >= reject) return x % n;
  }
}

// Bernoulli(num / den), 0 <= num <= den, 1 <= den < 2^63.
template <class Bits>
inline bool BernoulliRational(Bits& bits, uint64_t num, uint64_t den) {
  return UniformBelow(bits, den) < num;
}

// Bernoulli(exp(-num / den)), den in [1, 2^50): floor(gamma) draws of
// Bernoulli(exp(-1)), then the fractional part by K <- 1, while
// Bernoulli(gamma / K) K <- K + 1, success when K ends odd (exp(-gamma) is
// the sum of (-gamma)^k / k!).
template <class Bits>
inline bool BernoulliExpNeg(Bits& bits, uint64_t num, uint64_t den) {
  for (uint64_t whole = num / den; whole > 0; --whole) {
    uint64_t k = 1;  // Bernoulli(exp(-1)): gamma = 1
    while (k < kMaxK && BernoulliRational(bits, 1, k)) ++k;
    if (k % 2 == 0) return false;
  }
  const uint64_t rest = num % den;
  uint64_t k = 1;
  while (k < kMaxK && BernoulliRational(bits, rest, den * k)) ++k;
  return k % 2 == 1;
}

// Discrete Laplace of scale t >= 1: P[Y = y] proportional to exp(-|y| / t).
// Exact for |y| <= kTailCap t; the mass beyond is returned as values above
// kTailCap t, which the caller rejects.
template <class Bits>
inline int64_t DiscreteLaplace(Bits& bits, uint64_t t) {
  for (;;) {
    const uint64_t u = UniformBelow(bits, t);
    if (!BernoulliExpNeg(bits, u, t)) continue;
    uint64_t v = 0;
    while (v <= kTailCap && BernoulliExpNeg(bits, 1, 1)) ++v;
    const uint64_t x = u + t * v;  // v <= kTailCap + 1: no overflow
    const bool negative = (bits.next_u64() & 1u) != 0;
    if (negative && x == 0) continue;
    return negative ? -static_cast<int64_t>(x) : static_cast<int64_t>(x);
  }
}

// floor(sqrt(s)) for s < 2^32, by bisection on integers.
constexpr uint64_t IntegerSqrt(uint64_t s) {
  uint64_t lo = 0, hi = 1u << 16;
  while (hi - lo > 1) {
    const uint64_t mid = (lo + hi) / 2;
    if (mid * mid <= s) lo = mid;
    else hi = mid;
  }
  return lo;
}

// One draw of N_Z(0, s2), 1 <= s2 <= 2^24 (callers check the bound:
// privacy/ddg_params.h): a discrete Laplace Y of scale t = floor(sqrt(s2)) + 1,
// kept with probability exp(-(t |Y| - s2)^2 / (2 s2 t^2)).
template <class Bits>
inline int64_t DiscreteGaussian(Bits& bits, uint32_t s2) {
  const uint64_t t = IntegerSqrt(s2) + 1;
  const uint64_t den = 2ull * s2 * t * t;
  for (;;) {
    const int64_t y = DiscreteLaplace(bits, t);
    const uint64_t a = static_cast<uint64_t>(y < 0 ? -y : y);
    if (a > kTailCap * t) continue;
    const uint64_t ta = t * a;
    const uint64_t diff = ta > s2 ? ta - s2 : s2 - ta;
    if (BernoulliExpNeg(bits, diff * diff, den)) return y;
  }
}

}  // namespace fedrt::privacy
