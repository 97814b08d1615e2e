// The distributed mechanism's parts (docs/privacy-distributed.md, "Distributed DP under
// SecAgg+"): the exact discrete Gaussian sampler, the Hadamard rotation, the
// conditional rounding, the round's parameters and the codec, each against
// what it claims. Fixed seeds: every draw comes from a CounterRng.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/core/rng.h"
#include "fedrt/privacy/conditional_rounding.h"
#include "fedrt/privacy/ddg_codec.h"
#include "fedrt/privacy/ddg_params.h"
#include "fedrt/privacy/discrete_gaussian.h"
#include "fedrt/privacy/hadamard_rotation.h"

namespace fedrt {
namespace ddg_mechanism_test {

// Mean and variance of N_Z(0, s2) from n draws. The sample variance of n
// draws of a distribution with fourth moment 3 s2^2 has standard error
// s2 sqrt(2 / n): 0.32 % at n = 2 10^5, so 1.5 % is more than 4.5 standard
// errors; the mean's standard error is sqrt(s2 / n), and 5 of them are allowed.
TEST(DiscreteGaussian, MeanAndVarianceAreTheClaimedOnes) {
  constexpr int kDraws = 200000;
  for (uint32_t s2 : {1u, 10u, 1u << 16, 1u << 24}) {
    CounterRng rng(RngKey(17, 0, 0, s2, RngStream::kDdgTestNoise));
    double sum = 0, sq = 0;
    for (int i = 0; i < kDraws; ++i) {
      const double x = static_cast<double>(privacy::DiscreteGaussian(rng, s2));
      sum += x;
      sq += x * x;
    }
    const double mean = sum / kDraws, var = sq / kDraws - mean * mean;
    // The discrete Gaussian's variance: s2 up to a term below 1e-6 s2 for s2 >= 1
    // (sum x^2 e^{-x^2/(2 s2)} / sum e^{-x^2/(2 s2)}, summed directly below for s2 = 1).
    double want = s2;
    if (s2 == 1) {
      double z = 0, m2 = 0;
      for (int x = -60; x <= 60; ++x) {
        const double w = std::exp(-0.5 * x * x);
        z += w;
        m2 += x * x * w;
      }
      want = m2 / z;
    }
    std::printf("s2 = %u: mean %.4g, variance %.6g (ratio %.5f)\n", s2, mean, var, var / want);
    EXPECT_NEAR(mean, 0.0, 5 * std::sqrt(want / kDraws)) << s2;
    EXPECT_NEAR(var / want, 1.0, 0.015) << s2;
  }
}

// Chi-square of 10^5 draws at s2 = 4 against the exact pmf, cells
// -8..8 and the two tails: 18 cells, 17 degrees of freedom, whose 99.99 %
// quantile is 41.3. The same draws against the pmf of s2 = 4.4 (a sampler 10 %
// off) must fail it, so the test can tell.
double ChiSquare(const std::map<int, long>& counts, long n, double s2) {
  double z = 0;
  for (int x = -200; x <= 200; ++x) z += std::exp(-x * x / (2 * s2));
  double chi = 0, tail_lo = 0, tail_hi = 0;
  long obs_lo = 0, obs_hi = 0;
  for (int x = -200; x <= 200; ++x) {
    const double p = std::exp(-x * x / (2 * s2)) / z;
    const auto it = counts.find(x);
    const long o = it == counts.end() ? 0 : it->second;
    if (x < -8) tail_lo += p, obs_lo += o;
    else if (x > 8) tail_hi += p, obs_hi += o;
    else chi += (o - n * p) * (o - n * p) / (n * p);
  }
  chi += (obs_lo - n * tail_lo) * (obs_lo - n * tail_lo) / (n * tail_lo);
  chi += (obs_hi - n * tail_hi) * (obs_hi - n * tail_hi) / (n * tail_hi);
  return chi;
}

TEST(DiscreteGaussian, FollowsTheExactDistribution) {
  constexpr long kDraws = 100000;
  CounterRng rng(RngKey(5, 1, 2, 3, RngStream::kDdgTestNoise));
  std::map<int, long> counts;
  for (long i = 0; i < kDraws; ++i) ++counts[static_cast<int>(privacy::DiscreteGaussian(rng, 4))];
  const double chi = ChiSquare(counts, kDraws, 4.0), off = ChiSquare(counts, kDraws, 4.4);
  std::printf("chi-square at s2 = 4: %.2f (17 degrees of freedom); against s2 = 4.4: %.1f\n", chi, off);
  EXPECT_LT(chi, 41.3);
  EXPECT_GT(off, 41.3);
}

TEST(DiscreteGaussian, UniformBelowIsUnbiased) {
  CounterRng rng(99);
  long counts[3] = {0, 0, 0};
  constexpr long kDraws = 300000;
  for (long i = 0; i < kDraws; ++i) ++counts[privacy::UniformBelow(rng, 3)];
  for (long c : counts) EXPECT_NEAR(c / double(kDraws), 1.0 / 3, 5 * std::sqrt(2.0 / 9 / kDraws));
}

// Forward then inverse gives the vector back to 1e-12 relative, keeps its
// norm, and leaves the padding at zero; the rotation spreads a spike.
TEST(HadamardRotation, InverseUndoesTheRotation) {
  for (uint32_t d : {1u, 5u, 1000u, 4096u}) {
    const uint32_t dp = privacy::PaddedDim(d);
    ASSERT_GE(dp, d);
    ASSERT_EQ(dp & (dp - 1), 0u);
    ASSERT_LT(dp, 2 * d + 1);
    std::vector<double> x(d), z(dp);
    CounterRng rng(d);
    double norm = 0;
    for (double& v : x) v = rng.uniform() * 2 - 1, norm += v * v;
    const uint64_t seed = privacy::DdgRotationSeed(1, 0, 0, d);
    privacy::Rotate(x.data(), d, dp, seed, z.data());
    double rnorm = 0;
    for (double v : z) rnorm += v * v;
    EXPECT_NEAR(rnorm, norm, 1e-12 * norm) << d;
    privacy::Unrotate(z.data(), dp, seed);
    double err = 0;
    for (uint32_t i = 0; i < d; ++i) err = std::max(err, std::fabs(z[i] - x[i]));
    for (uint32_t i = d; i < dp; ++i) err = std::max(err, std::fabs(z[i]));
    EXPECT_LT(err, 1e-12 * std::sqrt(norm)) << d;
  }
  std::vector<double> spike(1024, 0.0), z(1024);
  spike[3] = 1.0;
  privacy::Rotate(spike.data(), 1024, 1024, 7, z.data());
  for (double v : z) EXPECT_NEAR(std::fabs(v), 1.0 / 32, 1e-15);
}

// The rounded vector's squared norm never passes the bound, here the
// DDGauss bound ||y||^2 + n/4 + ||y|| + sqrt(n)/2, which about 8 % of the
// unconditioned roundings exceed; with the bound (||y|| + sqrt(n))^2, which
// no rounding exceeds, each coordinate is unbiased (20000 roundings: standard
// error <= 0.5 / sqrt(20000) = 0.0035, 0.02 allowed); an unreachable bound
// fails with a Status after the retries.
TEST(ConditionalRounding, BoundHoldsAndRoundingIsUnbiased) {
  constexpr uint32_t n = 16;
  std::vector<double> y(n);
  CounterRng rng(3);
  double sq = 0;
  for (double& v : y) v = (rng.uniform() * 2 - 1) * 10, sq += v * v;
  const uint64_t tight = static_cast<uint64_t>(sq + n / 4.0 + std::sqrt(sq) + std::sqrt(n) / 2);
  const uint64_t loose = static_cast<uint64_t>((std::sqrt(sq) + std::sqrt(n)) * (std::sqrt(sq) + std::sqrt(n)));
  std::vector<int32_t> r(n);
  constexpr int kTrials = 20000;
  int above_tight_unconditioned = 0;
  for (uint64_t bound : {tight, loose}) {
    std::vector<double> mean(n, 0.0);
    for (int t = 0; t < kTrials; ++t) {
      ASSERT_TRUE(privacy::ConditionalRound(y.data(), n, bound, rng, r.data()).ok());
      uint64_t norm = 0;
      for (uint32_t i = 0; i < n; ++i) {
        norm += static_cast<uint64_t>(int64_t{r[i]} * r[i]);
        EXPECT_TRUE(r[i] == std::floor(y[i]) || r[i] == std::floor(y[i]) + 1);
        mean[i] += r[i];
      }
      ASSERT_LE(norm, bound);
      if (bound == loose && norm > tight) ++above_tight_unconditioned;
    }
    if (bound == loose)
      for (uint32_t i = 0; i < n; ++i) EXPECT_NEAR(mean[i] / kTrials, y[i], 0.02) << i;
  }
  std::printf("rounding: %d of %d unconditioned roundings above the tight bound\n", above_tight_unconditioned, kTrials);
  EXPECT_GT(above_tight_unconditioned, kTrials / 20);  // the tight bound did condition
  std::vector<double> halves(64, 0.5);
  std::vector<int32_t> out(64);
  const Status st = privacy::ConditionalRound(halves.data(), 64, 0, rng, out.data());
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
}

// The round's parameters: m = ceil(quorum n), m s2 gamma^2 = sigma^2 clip^2,
// the effective multiplier below sigma, bad values named.
TEST(DdgParams, RoundParametersAreTheClaimedOnes) {
  privacy::DdgRound r;
  ASSERT_EQ(privacy::DdgPlan(1.1, 2.0, 800000, 1u << 16, 50, 10000, 20, r), nullptr);
  EXPECT_EQ(r.m, 40u);
  EXPECT_EQ(r.d_pad, 16384u);
  EXPECT_NEAR(r.m * double(r.s2) * r.gamma * r.gamma, 1.1 * 1.1 * 2.0 * 2.0, 1e-12);
  EXPECT_LE(privacy::DdgEffectiveNoise(r), 1.1);
  EXPECT_GT(privacy::DdgEffectiveNoise(r), 1.0);
  EXPECT_EQ(privacy::DdgGroupFits(r), nullptr);
  EXPECT_EQ(privacy::DdgQuorumCount(800000, 1), 1u);
  EXPECT_EQ(privacy::DdgQuorumCount(1000000, 7), 7u);
  EXPECT_EQ(privacy::DdgQuorumCount(500000, 7), 4u);
  EXPECT_NE(std::string(privacy::DdgPlan(1.1, 2.0, 800000, 0, 50, 100, 20, r)).find("privacy.device_variance"),
            std::string::npos);
  EXPECT_NE(std::string(privacy::DdgPlan(0.0, 2.0, 800000, 16, 50, 100, 20, r)).find("privacy.noise_multiplier"),
            std::string::npos);
  ASSERT_EQ(privacy::DdgPlan(1.1, 2.0, 800000, 1u << 16, 50, 10000, 12, r), nullptr);
  EXPECT_NE(std::string(privacy::DdgGroupFits(r)).find("compression.bits"), std::string::npos);
  EXPECT_LT(privacy::DdgTau(40, 1u << 16), 1e-300);
}

// K devices' encodings summed mod 2^32 decode to the sum of their updates
// plus noise of variance K s2 gamma^2 per coordinate (plus the rounding's,
// at most K gamma^2 / 4): checked within 5 % at d = 4096.
TEST(DdgCodec, SumDecodesToTheUpdatesPlusNoise) {
  constexpr uint32_t d = 4096, K = 10;
  privacy::DdgRound r;
  ASSERT_EQ(privacy::DdgPlan(1.0, 1.0, 1000000, 1u << 10, K, d, 24, r), nullptr);
  ASSERT_EQ(privacy::DdgGroupFits(r), nullptr);
  const uint64_t seed = privacy::DdgRotationSeed(1, 0, 0, 0);
  std::vector<double> sum_x(d, 0.0), work(r.d_pad), out(d);
  std::vector<uint32_t> enc(r.d_pad), total(r.d_pad, 0);
  for (uint32_t k = 0; k < K; ++k) {
    std::vector<double> x(d);
    CounterRng rng(100 + k);
    double norm = 0;
    for (double& v : x) v = rng.uniform() - 0.5, norm += v * v;
    for (double& v : x) v /= std::sqrt(norm);  // ||x|| = clip = 1
    for (uint32_t i = 0; i < d; ++i) sum_x[i] += x[i];
    CounterRng bits(privacy::DdgTestNoiseKey(9, 0, 0, k, 0));
    ASSERT_TRUE(privacy::DdgEncode(x.data(), r, seed, bits, work.data(), enc.data()).ok());
    for (uint32_t i = 0; i < r.d_pad; ++i) {
      ASSERT_LT(enc[i], 1u << r.bits);
      total[i] += enc[i];  // mod 2^32, as SecAgg+ sums
    }
  }
  privacy::DdgDecode(total.data(), r, seed, work.data(), out.data());
  double sq = 0;
  for (uint32_t i = 0; i < d; ++i) sq += (out[i] - sum_x[i]) * (out[i] - sum_x[i]);
  const double var = sq / d, noise = K * double(r.s2) * r.gamma * r.gamma;
  std::printf("codec: error variance %.6g, K s2 gamma^2 = %.6g (ratio %.4f)\n", var, noise, var / noise);
  EXPECT_GT(var / noise, 0.95);
  EXPECT_LT(var / noise, 1.05 + 0.25 / r.s2);
}

}  // namespace ddg_mechanism_test
}  // namespace fedrt
