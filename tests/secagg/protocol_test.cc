// SecAgg+ protocol: exact sums, neighbour graph, dropouts, failure, wrap check,
// refusal of bad messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "fedrt/core/rng.h"
#include "fedrt/secagg/device.h"
#include "fedrt/secagg/server.h"
#include "secagg_round.h"
#include "round_fixture.h"

namespace fedrt::secagg {
// Named, not anonymous: this file's helpers stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace protocol_test {

// Default graph, or a sparse k-regular one when k > 0 (round_fixture.h).
RoundParams Params(uint32_t n, uint32_t dim, uint32_t bits, uint64_t round_id = 7, uint32_t k = 0) {
  return testing::TestParams(n, dim, bits, round_id, k, 0x5eed0000 + round_id);
}
using Inputs = testing::TestInputs;

std::vector<uint32_t> All(uint32_t n) { return testing::AllIds(n); }

TEST(SecAggProtocol, DefaultGraphAndFailureBound) {
  uint32_t k, t;
  DefaultGraph(10, k, t);
  EXPECT_EQ(k, 9u);  // complete
  EXPECT_EQ(t, 6u);  // > (k + 1) / 2: b has 10 holders (9 neighbours and the device itself)
  DefaultGraph(100, k, t);
  EXPECT_EQ(k, 44u);
  EXPECT_EQ(t, 23u);
  EXPECT_LT(UnmaskFailureBound(100, k, t, 0.2), 1e-3);
  DefaultGraph(1000, k, t);
  EXPECT_EQ(k, 54u);
  EXPECT_EQ(t, 28u);
  // 20% dropout: 1000 P[Bin(54, 0.8) < 28] = 8.3e-4, the per-round failure bound we accept.
  EXPECT_NEAR(UnmaskFailureBound(1000, k, t, 0.2), 8.27e-4, 0.01e-4);
  // A sparser graph would fail often: k = 30 about one round in four.
  EXPECT_NEAR(UnmaskFailureBound(1000, 30, 16, 0.2), 0.231, 0.001);
  DefaultGraph(1000, k, t, 0.05, 1e-3);  // a lower design dropout allows a sparser graph
  EXPECT_LT(k, 54u);
  // Complete graph: fewer than t = 6 of the 10 devices answer, P[Bin(10, 0.8) < 6].
  EXPECT_NEAR(UnmaskFailureBound(10, 9, 6, 0.2), 3.28e-2, 0.01e-2);
  EXPECT_DOUBLE_EQ(UnmaskFailureBound(10, 9, 5, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(UnmaskFailureBound(10, 9, 5, 1.0), 1.0);
}

TEST(SecAggProtocol, NeighbourGraphIsSymmetricKRegularAndSorted) {
  for (uint32_t n : {3u, 10u, 41u, 100u, 1000u}) {
    const RoundParams p = Params(n, 1, 8, 7, n == 41 ? 12 : 0);
    std::vector<std::set<uint32_t>> g(n);
    uint32_t buf[kMaxNeighbours];
    for (uint32_t u = 0; u < n; ++u) {
      const uint32_t c = Neighbours(p, u, buf);
      ASSERT_EQ(c, p.k) << "n=" << n << " u=" << u;
      ASSERT_TRUE(std::is_sorted(buf, buf + c));
      for (uint32_t i = 0; i < c; ++i) {
        ASSERT_NE(buf[i], u);
        ASSERT_LT(buf[i], n);
        g[u].insert(buf[i]);
      }
      ASSERT_EQ(g[u].size(), c);  // distinct
    }
    for (uint32_t u = 0; u < n; ++u)
      for (uint32_t v : g[u]) ASSERT_TRUE(g[v].count(u)) << "n=" << n << " " << u << "-" << v;
  }
  // A different graph seed gives a different graph (the permutation is keyed).
  RoundParams a = Params(1000, 1, 8), b = a;
  b.graph_seed ^= 1;
  uint32_t na[kMaxNeighbours], nb[kMaxNeighbours];
  Neighbours(a, 0, na);
  Neighbours(b, 0, nb);
  EXPECT_FALSE(std::equal(na, na + a.k, nb));
}

TEST(SecAggProtocol, ExactSumWithoutDropouts) {
  for (uint32_t n : {3u, 10u, 41u}) {
    const RoundParams p = Params(n, 37, 16, 7, n == 41 ? 8 : 0);
    const Inputs in(p, n);
    const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 99);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.device_failures, 0u);
    EXPECT_EQ(r.contributors, All(n));
    EXPECT_EQ(r.sum, in.sum(All(n))) << "n=" << n;
  }
}

TEST(SecAggProtocol, TwentyPercentDropAfterSharingKeysGivesExactSumOfSurvivors) {
  for (uint32_t n : {10u, 41u}) {
    const RoundParams p = Params(n, 64, 12, 7, n == 41 ? 10 : 0);
    const Inputs in(p, 5 + n);
    std::vector<DropPoint> drops(n, DropPoint::kNone);
    std::vector<uint32_t> survivors;
    CounterRng rng(n);
    std::vector<uint32_t> order = All(n);
    for (uint32_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    for (uint32_t i = 0; i < n / 5; ++i) drops[order[i]] = DropPoint::kBeforeMasked;
    for (uint32_t u = 0; u < n; ++u)
      if (drops[u] == DropPoint::kNone) survivors.push_back(u);
    const SimulatedRound r = RunSimulatedRound(p, in.ptrs, drops, 3);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.contributors, survivors);
    EXPECT_EQ(r.sum, in.sum(survivors)) << "n=" << n;
  }
}

TEST(SecAggProtocol, TwentyPercentVanishAfterMaskedInputStillUnmasksTheirInputs) {
  const uint32_t n = 20;
  const RoundParams p = Params(n, 50, 16, 7, 8);
  const Inputs in(p, 11);
  std::vector<DropPoint> drops(n, DropPoint::kNone);
  for (uint32_t u : {1u, 6u, 13u, 17u}) drops[u] = DropPoint::kBeforeUnmask;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, drops, 4);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.contributors, All(n));  // their masked inputs arrived
  EXPECT_EQ(r.sum, in.sum(All(n)));
}

TEST(SecAggProtocol, MixedDropPointsGiveExactSum) {
  const uint32_t n = 30;
  const RoundParams p = Params(n, 20, 10, 7, 6);
  const Inputs in(p, 12);
  std::vector<DropPoint> drops(n, DropPoint::kNone);
  drops[0] = DropPoint::kBeforeAdvertise;
  drops[5] = DropPoint::kBeforeShares;
  drops[9] = DropPoint::kBeforeMasked;
  drops[22] = DropPoint::kBeforeUnmask;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, drops, 5);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  std::vector<uint32_t> contrib;
  for (uint32_t u = 0; u < n; ++u)
    if (u != 0 && u != 5 && u != 9) contrib.push_back(u);
  EXPECT_EQ(r.contributors, contrib);
  EXPECT_EQ(r.sum, in.sum(contrib));
}

TEST(SecAggProtocol, MoreThanNMinusTDropoutsFailSafelyAndTheNextRoundWorks) {
  const uint32_t n = 10;  // complete graph, k = 9, t = 6: n - t = 4 may vanish
  const RoundParams p = Params(n, 16, 8);
  const Inputs in(p, 13);
  std::vector<DropPoint> drops(n, DropPoint::kNone);
  for (uint32_t u = 0; u < 5; ++u) drops[u] = DropPoint::kBeforeUnmask;  // 5 > n - t
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, drops, 6);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), StatusCode::kFailedPrecondition);
  const std::string msg = r.status.message();
  // The consistency check stops it before anyone reveals a share.
  EXPECT_NE(msg.find("only 5 survivors sent consistency tags, fewer than t = 6"), std::string::npos) << msg;
  EXPECT_TRUE(r.sum.empty());  // nothing (masked or not) is released
  // Vanishing after the check: the unmasking lacks shares.
  for (uint32_t u = 0; u < 5; ++u) drops[u] = DropPoint::kAfterCheck;
  const SimulatedRound late = RunSimulatedRound(p, in.ptrs, drops, 6);
  ASSERT_FALSE(late.status.ok());
  EXPECT_EQ(late.status.code(), StatusCode::kFailedPrecondition);
  const std::string why = late.status.message();
  EXPECT_NE(why.find("cannot remove the self mask of device"), std::string::npos) << why;
  EXPECT_NE(why.find("t = 6"), std::string::npos) << why;
  EXPECT_TRUE(late.sum.empty());
  for (uint32_t u = 0; u < 5; ++u) drops[u] = DropPoint::kBeforeUnmask;
  // Exactly n - t vanishing still works.
  drops[4] = DropPoint::kNone;
  const SimulatedRound ok5 = RunSimulatedRound(p, in.ptrs, drops, 6);
  ASSERT_TRUE(ok5.status.ok()) << ok5.status.message();
  EXPECT_EQ(ok5.sum, in.sum(All(n)));
  // Too few masked inputs: refused before unmasking.
  std::fill(drops.begin(), drops.end(), DropPoint::kBeforeMasked);
  drops[0] = drops[1] = drops[2] = drops[3] = drops[4] = DropPoint::kNone;  // 5 < t
  const SimulatedRound few = RunSimulatedRound(p, in.ptrs, drops, 6);
  ASSERT_FALSE(few.status.ok());
  EXPECT_NE(std::string(few.status.message()).find("masked inputs arrived"), std::string::npos) << few.status.message();
  // The next round (new id, everybody present) is unaffected.
  const RoundParams next = Params(n, 16, 8, 8);
  const SimulatedRound r2 = RunSimulatedRound(next, in.ptrs, {}, 6);
  ASSERT_TRUE(r2.status.ok()) << r2.status.message();
  EXPECT_EQ(r2.sum, in.sum(All(n)));
}

TEST(SecAggProtocol, RefusesParametersThatCouldWrap) {
  RoundParams p = Params(300, 4, 24);  // 24 + log2(300) > 32
  const Status st = ValidateParams(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("wrap"), std::string::npos);
  EXPECT_NE(std::string(st.message()).find("bits + log2 n <= 32"), std::string::npos);
  p = Params(256, 4, 24);  // 256 (2^24 - 1) < 2^32: fits
  EXPECT_TRUE(ValidateParams(p).ok());
  p = Params(10, 4, 8);
  p.t = 5;  // 2t <= k + 1 = 10: a lying server could get t shares of b and of s_sk
  EXPECT_FALSE(ValidateParams(p).ok());
  p.t = 6;
  EXPECT_TRUE(ValidateParams(p).ok());
  p = Params(2, 4, 8);
  EXPECT_FALSE(ValidateParams(p).ok());
  p = Params(100, 4, 8);
  p.k = 21;  // odd and not complete
  EXPECT_FALSE(ValidateParams(p).ok());
}

// Drives three devices by hand to check what each refuses.
TEST(SecAggProtocol, DevicesAndServerRefuseBadMessages) {
  const RoundParams p = Params(4, 8, 8);  // complete graph, k = 3, t = 3
  SecAggServer server;
  ASSERT_TRUE(server.begin(p).ok());
  std::vector<SecAggDevice> dev(4);
  std::vector<Advertise> ads(4);
  for (uint32_t u = 0; u < 4; ++u) {
    ASSERT_TRUE(dev[u].advertise(p, u, SimulatedEntropy(1, p.round_id, u), ads[u]).ok());
    ASSERT_TRUE(server.on_advertise(ads[u]).ok());
  }
  EXPECT_FALSE(server.on_advertise(ads[0]).ok());  // duplicate
  Advertise stranger = ads[0];
  stranger.id = 9;
  EXPECT_FALSE(server.on_advertise(stranger).ok());
  ASSERT_TRUE(server.close_advertise().ok());
  std::vector<std::vector<ShareCiphertext>> sent(4, std::vector<ShareCiphertext>(kMaxNeighbours));
  for (uint32_t u = 0; u < 4; ++u) {
    const auto nads = server.neighbour_ads(u);
    size_t w = 0;
    ASSERT_TRUE(dev[u].share_keys(nads.data(), nads.size(), sent[u].data(), sent[u].size(), w).ok());
    ASSERT_EQ(w, 3u);
    sent[u].resize(w);
    EXPECT_FALSE(server.on_shares(u, sent[u].data(), 2).ok());  // must cover every neighbour
    ASSERT_TRUE(server.on_shares(u, sent[u].data(), w).ok());
  }
  ASSERT_TRUE(server.close_shares().ok());
  std::vector<uint32_t> x(8, 3), y(8);
  // A tampered ciphertext: the device refuses (UNAUTHENTICATED) and leaves the round.
  auto in0 = server.shares_for(0);
  in0[1].ct[10] ^= 0x80;
  Status st = dev[0].masked_input(in0.data(), in0.size(), x.data(), y.data());
  EXPECT_EQ(st.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(dev[0].phase(), SecAggDevice::Phase::kFailed);
  // A share relabelled as coming from another neighbour fails authentication too.
  auto in1 = server.shares_for(1);
  std::swap(in1[0].from, in1[1].from);
  EXPECT_FALSE(dev[1].masked_input(in1.data(), in1.size(), x.data(), y.data()).ok());
  // Out-of-range input.
  auto in2 = server.shares_for(2);
  std::vector<uint32_t> big(8, 256);
  EXPECT_EQ(dev[2].masked_input(in2.data(), in2.size(), big.data(), y.data()).code(), StatusCode::kOutOfRange);
  // Device 3 is fine; calling it twice is out of order.
  auto in3 = server.shares_for(3);
  ASSERT_TRUE(dev[3].masked_input(in3.data(), in3.size(), x.data(), y.data()).ok());
  EXPECT_FALSE(dev[3].masked_input(in3.data(), in3.size(), x.data(), y.data()).ok());
  ASSERT_TRUE(server.on_masked(3, y.data()).ok());
  EXPECT_FALSE(server.on_masked(3, y.data()).ok());  // duplicate
  EXPECT_FALSE(server.on_masked(17, y.data()).ok());
  // Only one masked input (< t = 3): the server refuses to unmask.
  EXPECT_FALSE(server.close_masked().ok());
}

TEST(SecAggProtocol, HolderXIsPublicAndForgedXIsRefused) {
  const RoundParams p = Params(5, 4, 8);  // complete graph, k = 4, t = 3
  EXPECT_EQ(HolderX(p, 2, 0), 1);  // 2's neighbours: 0 1 3 4
  EXPECT_EQ(HolderX(p, 2, 4), 4);
  EXPECT_EQ(HolderX(p, 2, 2), 5);  // its own share of b: k + 1
  const RoundParams sparse = Params(41, 4, 8, 7, 4);
  uint32_t nb[kMaxNeighbours];
  Neighbours(sparse, 9, nb);
  uint32_t stranger = 0;
  while (stranger == 9 || std::find(nb, nb + 4, stranger) != nb + 4) ++stranger;
  EXPECT_EQ(HolderX(sparse, 9, stranger), 0);  // not a holder

  SecAggServer server;
  ASSERT_TRUE(server.begin(p).ok());
  std::vector<SecAggDevice> dev(p.n);
  for (uint32_t u = 0; u < p.n; ++u) {
    Advertise a;
    ASSERT_TRUE(dev[u].advertise(p, u, SimulatedEntropy(3, p.round_id, u), a).ok());
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
  std::vector<uint32_t> x(p.dim, 2), y(p.dim);
  for (uint32_t u = 0; u < p.n; ++u) {
    const auto in = server.shares_for(u);
    ASSERT_TRUE(dev[u].masked_input(in.data(), in.size(), x.data(), y.data()).ok());
    ASSERT_TRUE(server.on_masked(u, y.data()).ok());
  }
  ASSERT_TRUE(server.close_masked().ok());
  std::vector<UnmaskShare> sh(kMaxNeighbours + 1);
  for (uint32_t u = 0; u < p.n; ++u) {
    const auto surv = server.survivors_for(u);
    size_t w = 0;
    ASSERT_TRUE(dev[u].unmask(surv.data(), surv.size(), sh.data(), sh.size(), w).ok());
    if (u == 0) {  // a device claiming another holder's point is refused
      sh[1].x = static_cast<uint8_t>(sh[1].x % p.k + 1);
      EXPECT_EQ(server.on_unmask(u, sh.data(), w).code(), StatusCode::kInvalidArgument);
      sh[1].x = HolderX(p, sh[1].about, u);
    }
    ASSERT_TRUE(server.on_unmask(u, sh.data(), w).ok());
  }
  std::vector<uint32_t> sum;
  ASSERT_TRUE(server.finish(sum).ok());
  EXPECT_EQ(sum, std::vector<uint32_t>(p.dim, 2 * p.n));
}

}  // namespace protocol_test
}  // namespace fedrt::secagg
