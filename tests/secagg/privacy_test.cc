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

#include "fedrt/secagg/device.h"
#include "fedrt/secagg/server.h"
#include "fedrt/secagg/shamir.h"
#include "secagg_round.h"

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
  DefaultGraph(p.n, p.k, p.t);  // complete, k = 9, t = 6
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

// A malicious server tells some of device 0's neighbours that it survived and
// the others that it dropped, to collect shares of both its self-mask seed and
// its mask key. Honest devices answer from their own view; with t > (k + 1) / 2
// no split yields t shares of both, and Shamir refuses to reconstruct.
TEST(SecAggPrivacy, ALyingServerCannotCollectBothSecretsOfADevice) {
  RoundParams p;
  p.n = 10;
  p.dim = 8;
  p.bits = 8;
  p.round_id = 5;
  p.graph_seed = 55;
  DefaultGraph(p.n, p.k, p.t);  // complete, k = 9, t = 6
  ASSERT_EQ(p.t, 6u);
  for (uint32_t told_alive = 0; told_alive <= p.k; ++told_alive) {
    SecAggServer server;
    ASSERT_TRUE(server.begin(p).ok());
    std::vector<SecAggDevice> dev(p.n);
    for (uint32_t u = 0; u < p.n; ++u) {
      Advertise a;
      ASSERT_TRUE(dev[u].advertise(p, u, SimulatedEntropy(8, p.round_id, u), a).ok());
      ASSERT_TRUE(server.on_advertise(a).ok());
    }
    ASSERT_TRUE(server.close_advertise().ok());
    std::vector<ShareCiphertext> out(kMaxNeighbours);
    for (uint32_t u = 0; u < p.n; ++u) {
      const auto ads = server.neighbour_ads(u);
      size_t w = 0;
      ASSERT_TRUE(dev[u].share_keys(ads.data(), ads.size(), out.data(), out.size(), w).ok());
      ASSERT_TRUE(server.on_shares(u, out.data(), w).ok());
    }
    ASSERT_TRUE(server.close_shares().ok());
    std::vector<uint32_t> x(p.dim, 1), y(p.dim);
    for (uint32_t u = 0; u < p.n; ++u) {
      const auto in = server.shares_for(u);
      ASSERT_TRUE(dev[u].masked_input(in.data(), in.size(), x.data(), y.data()).ok());
    }
    // Round 3, forged: neighbours 1..told_alive (and device 0 itself) hear that 0
    // survived, the others that it dropped.
    std::vector<uint8_t> xs_b, ys_b, xs_s, ys_s;
    std::vector<UnmaskShare> sh(kMaxNeighbours + 1);
    for (uint32_t v = 0; v < p.n; ++v) {
      std::vector<uint32_t> surv;
      for (uint32_t w = 0; w < p.n; ++w)
        if (w != 0 || v == 0 || v <= told_alive) surv.push_back(w);
      size_t written = 0;
      ASSERT_TRUE(dev[v].unmask(surv.data(), surv.size(), sh.data(), sh.size(), written).ok());
      for (size_t i = 0; i < written; ++i) {
        if (sh[i].about != 0) continue;
        auto& xs = sh[i].kind == ShareKind::kSelfSeed ? xs_b : xs_s;
        auto& ys = sh[i].kind == ShareKind::kSelfSeed ? ys_b : ys_s;
        xs.push_back(sh[i].x);
        ys.insert(ys.end(), sh[i].share, sh[i].share + kKeyBytes);
      }
    }
    EXPECT_EQ(xs_b.size() + xs_s.size(), p.k + 1);  // every holder answered once
    const bool both = xs_b.size() >= p.t && xs_s.size() >= p.t;
    EXPECT_FALSE(both) << told_alive << " told alive: " << xs_b.size() << " seed and " << xs_s.size() << " key shares";
    uint8_t secret[kKeyBytes];
    const bool got_b = ShamirCombine(xs_b.data(), ys_b.data(), xs_b.size(), kKeyBytes, p.t, secret).ok();
    const bool got_s = ShamirCombine(xs_s.data(), ys_s.data(), xs_s.size(), kKeyBytes, p.t, secret).ok();
    EXPECT_FALSE(got_b && got_s) << told_alive;
    // With the weaker threshold t = k / 2 + 1 = 5 the split 4 / 5 would give both.
    if (told_alive == 4) {
      EXPECT_TRUE(xs_b.size() >= 5 && xs_s.size() >= 5);
    }
  }
}

}  // namespace
}  // namespace fedrt::secagg
