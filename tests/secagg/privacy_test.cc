// Privacy of a SecAgg+ round, from everything the server receives (Transcript):
// (1) each masked update alone is indistinguishable from uniform in Z_(2^32)
//     (byte chi-square and per-bit frequency at fixed seeds), while the raw
//     inputs fail the same tests;
// (2) the server never holds a share of a surviving device's s_sk (so never
//     t of them), nor a share of a dropped device's self-mask seed, and
//     the share ciphertexts look uniform too.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "fedrt/secagg/simulated_round.h"

namespace fedrt::secagg {
namespace {

// chi^2 quantile at 0.999 with 255 degrees of freedom (Wilson-Hilferty: 330.5).
constexpr double kChi2Crit255 = 330.5;
// Two-sided normal quantile at 1e-5 per bit position (32 positions x 10 vectors).
constexpr double kZCrit = 4.42;

double ByteChiSquare(const uint8_t* p, size_t n) {
  std::vector<double> count(256, 0.0);
  for (size_t i = 0; i < n; ++i) count[p[i]] += 1.0;
  const double e = static_cast<double>(n) / 256.0;
  double chi = 0.0;
  for (double c : count) chi += (c - e) * (c - e) / e;
  return chi;
}

double MaxBitZ(const std::vector<uint32_t>& y) {
  double worst = 0.0;
  const double n = static_cast<double>(y.size());
  for (int b = 0; b < 32; ++b) {
    double ones = 0.0;
    for (uint32_t v : y) ones += (v >> b) & 1u;
    worst = std::max(worst, std::fabs(ones - n / 2) / std::sqrt(n / 4));
  }
  return worst;
}

double WordChiSquare(const std::vector<uint32_t>& y) {
  return ByteChiSquare(reinterpret_cast<const uint8_t*>(y.data()), 4 * y.size());
}

TEST(SecAggPrivacy, ServerTranscriptRevealsNoSingleUpdate) {
  RoundParams p;
  p.n = 10;
  p.dim = 2048;
  p.bits = 16;
  p.round_id = 42;
  p.graph_seed = 4242;
  DefaultGraph(p.n, p.k, p.t);  // complete, k = 9, t = 5
  // Very structured inputs: constants, a ramp, a sparse spike train.
  std::vector<std::vector<uint32_t>> x(p.n, std::vector<uint32_t>(p.dim));
  std::vector<const uint32_t*> ptrs;
  for (uint32_t u = 0; u < p.n; ++u) {
    for (uint32_t i = 0; i < p.dim; ++i)
      x[u][i] = u % 3 == 0 ? 0x8000u : u % 3 == 1 ? (i * 31u) & 0xFFFFu : (i % 64 == 0 ? 0xFFFFu : 0u);
    ptrs.push_back(x[u].data());
  }
  std::vector<DropPoint> drops(p.n, DropPoint::kNone);
  drops[3] = DropPoint::kBeforeMasked;  // its pairwise masks must be removed via s_sk shares
  drops[7] = DropPoint::kBeforeMasked;
  Transcript tr;
  const SimulatedRound r = RunSimulatedRound(p, ptrs, drops, 2024, &tr);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(tr.masked.size(), 8u);

  // (1) Uniformity of every masked update taken alone; the raw inputs fail.
  for (size_t i = 0; i < tr.masked.size(); ++i) {
    const auto& y = tr.masked[i];
    EXPECT_LT(WordChiSquare(y), kChi2Crit255) << "masked update of device " << tr.masked_from[i];
    EXPECT_LT(MaxBitZ(y), kZCrit) << "masked update of device " << tr.masked_from[i];
    const auto& raw = x[tr.masked_from[i]];
    EXPECT_GT(WordChiSquare(raw), kChi2Crit255) << "the test must be able to reject device " << tr.masked_from[i];
    EXPECT_GT(MaxBitZ(raw), kZCrit);
  }
  // The encrypted shares the server routes look uniform as well.
  std::vector<uint8_t> ct;
  for (const auto& c : tr.shares) ct.insert(ct.end(), c.ct, c.ct + kSharePlainBytes);
  EXPECT_GT(ct.size(), 5000u);
  EXPECT_LT(ByteChiSquare(ct.data(), ct.size()), kChi2Crit255);

  // (2) Shares in the clear, per device and kind.
  std::map<uint32_t, int> seed_shares, key_shares;
  for (const UnmaskShare& s : tr.unmask) (s.kind == ShareKind::kSelfSeed ? seed_shares : key_shares)[s.about]++;
  for (uint32_t u = 0; u < p.n; ++u) {
    const bool survived = drops[u] == DropPoint::kNone;
    if (survived) {
      EXPECT_EQ(key_shares[u], 0) << "server got a share of surviving device " << u << "'s pairwise key";
      EXPECT_GE(seed_shares[u], static_cast<int>(p.t));
    } else {
      EXPECT_EQ(seed_shares[u], 0) << "server got a share of dropped device " << u << "'s self-mask seed";
      EXPECT_GE(key_shares[u], static_cast<int>(p.t));  // the bookkeeping above can see shares
    }
  }
}

}  // namespace
}  // namespace fedrt::secagg
