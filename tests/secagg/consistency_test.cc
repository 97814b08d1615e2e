// The SecAgg+ consistency check (protocol.h ConsistencyTag): a server that
// tells devices different survivor lists is caught before any share is
// revealed: the devices it lied to and the device it lied about abort
// (ABORTED), and with the complete graph every device does. A server that also
// hides the tags that would expose it leaves a minority without enough
// confirmations (they abort) and a majority with one consistent list.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "fedrt/core/rng.h"
#include "fedrt/secagg/device.h"
#include "fedrt/secagg/server.h"
#include "secagg_round.h"
#include "round_fixture.h"

namespace fedrt::secagg {
// Named, not anonymous: this file's helpers stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace consistency_test {

RoundParams CheckParams(uint32_t n, uint32_t k = 0) { return testing::TestParams(n, 24, 16, 21, k, 0xC0C0A); }

struct CheckInputs : testing::TestInputs {
  explicit CheckInputs(const RoundParams& p) : TestInputs(p, p.n + 5) {}
  std::vector<uint32_t> sum() const { return TestInputs::sum(testing::AllIds(static_cast<uint32_t>(x.size()))); }
};

std::vector<uint32_t> Range(uint32_t a, uint32_t b) {
  std::vector<uint32_t> v;
  for (uint32_t i = a; i < b; ++i) v.push_back(i);
  return v;
}

TEST(SecAggConsistency, HonestRoundPassesTheCheckAndCountsItsTraffic) {
  const RoundParams p = CheckParams(10);
  const CheckInputs in(p);
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 3);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.sum, in.sum());
  EXPECT_TRUE(r.detected_lie.empty());
  // Uplink: keys, 9 share ciphertexts, y, 9 tags and 10 unmask shares per device.
  EXPECT_EQ(r.traffic.up_bytes,
            10 * (kAdvertiseBytes + 9 * kShareCiphertextBytes + 4 * p.dim + 9 * kConsistencyTagBytes +
                  10 * kUnmaskShareBytes));
}

// n = 10, complete graph (t = 6): the server tells devices 0-4 that device 9
// dropped and the others that it survived, and forwards every tag. All ten
// see a tag that does not verify against their own list and reveal nothing.
TEST(SecAggConsistency, ALyingServerIsDetectedByEveryHonestDevice) {
  const RoundParams p = CheckParams(10);
  const CheckInputs in(p);
  SurvivorLie lie;
  lie.victim = 9;
  lie.told_dropped = Range(0, 5);
  Transcript tr;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 4, &tr, {}, &lie);
  EXPECT_EQ(r.detected_lie, Range(0, 10));
  EXPECT_TRUE(tr.unmask.empty()) << "a device revealed a share";
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.sum.empty());
}

// The same lie to devices 0-2, with the tags that would expose it withheld:
// 0-2 get 2 confirmations (t - 1 = 5 needed) and abort; 3-9 confirm each other
// (6 each) on the true list and unmask it. The lie bought no share of device
// 9's s_sk, and the sum is exact.
TEST(SecAggConsistency, HiddenTagsLeaveTheMinorityAbortingAndTheMajorityConsistent) {
  const RoundParams p = CheckParams(10);
  const CheckInputs in(p);
  SurvivorLie lie;
  lie.victim = 9;
  lie.told_dropped = Range(0, 3);
  lie.suppress = true;
  Transcript tr;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 5, &tr, {}, &lie);
  EXPECT_EQ(r.detected_lie, Range(0, 3));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.sum, in.sum());
  for (const UnmaskShare& s : tr.unmask) {
    EXPECT_GE(s.from, 3u);
    EXPECT_EQ(s.kind, ShareKind::kSelfSeed);
  }
}

// A sparse graph (n = 41, k = 10, t = 6): the server tells half of device
// 17's neighbours that 17 dropped. Each of them and 17 itself abort, and no
// share of 17's s_sk is revealed by anyone.
TEST(SecAggConsistency, InASparseGraphTheVictimAndEveryDeviceLiedToDetect) {
  const RoundParams p = CheckParams(41, 10);
  const CheckInputs in(p);
  uint32_t nb[kMaxNeighbours];
  const uint32_t c = Neighbours(p, 17, nb);
  ASSERT_EQ(c, 10u);
  SurvivorLie lie;
  lie.victim = 17;
  lie.told_dropped.assign(nb, nb + 5);
  Transcript tr;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 6, &tr, {}, &lie);
  std::vector<uint32_t> must = lie.told_dropped;
  must.push_back(17);
  for (uint32_t u : must)
    EXPECT_TRUE(std::binary_search(r.detected_lie.begin(), r.detected_lie.end(), u)) << "device " << u;
  for (const UnmaskShare& s : tr.unmask) EXPECT_FALSE(s.about == 17 && s.kind == ShareKind::kMaskKey) << s.from;
}

// Tags that were tampered with, replayed to another device, duplicated or
// missing are refused by the device; the server refuses tags to unlisted devices.
TEST(SecAggConsistency, ForgedReplayedAndTooFewTagsAreRefused) {
  const RoundParams p = CheckParams(4);  // complete, k = 3, t = 3
  ASSERT_EQ(p.t, 3u);
  const CheckInputs in(p);
  SecAggDevice dev[4];
  SecAggServer server;
  ASSERT_TRUE(server.begin(p).ok());
  for (uint32_t u = 0; u < 4; ++u) {
    Advertise a;
    ASSERT_TRUE(dev[u].advertise(p, u, SimulatedEntropy(1, p.round_id, u), a).ok());
    ASSERT_TRUE(server.on_advertise(a).ok());
  }
  ASSERT_TRUE(server.close_advertise().ok());
  ShareCiphertext cts[kMaxNeighbours];
  for (uint32_t u = 0; u < 4; ++u) {
    const auto ads = server.neighbour_ads(u);
    size_t w = 0;
    ASSERT_TRUE(dev[u].share_keys(ads.data(), ads.size(), cts, kMaxNeighbours, w).ok());
    ASSERT_TRUE(server.on_shares(u, cts, w).ok());
  }
  ASSERT_TRUE(server.close_shares().ok());
  std::vector<uint32_t> y(p.dim);
  for (uint32_t u = 0; u < 4; ++u) {
    const auto in_cts = server.shares_for(u);
    ASSERT_TRUE(dev[u].masked_input(in_cts.data(), in_cts.size(), in.ptrs[u], y.data()).ok());
    ASSERT_TRUE(server.on_masked(u, y.data()).ok());
  }
  ASSERT_TRUE(server.close_masked().ok());
  std::vector<std::vector<ConsistencyTag>> tags(4, std::vector<ConsistencyTag>(kMaxNeighbours));
  for (uint32_t u = 0; u < 4; ++u) {
    const auto surv = server.survivors_for(u);
    size_t w = 0;
    ASSERT_TRUE(dev[u].check_survivors(surv.data(), surv.size(), tags[u].data(), tags[u].size(), w).ok());
    ASSERT_EQ(w, 3u);
    tags[u].resize(w);
    auto stray = tags[u];
    stray[0].to = u;  // to itself: not a neighbour that shared with it
    EXPECT_EQ(server.on_check(u, stray.data(), stray.size()).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(server.on_check(u, tags[u].data(), 2).code(), StatusCode::kInvalidArgument);  // one missing
    ASSERT_TRUE(server.on_check(u, tags[u].data(), w).ok());
  }
  ASSERT_TRUE(server.close_check().ok());
  UnmaskShare out[kMaxNeighbours + 1];
  size_t w = 0;
  auto in0 = server.checks_for(0);
  ASSERT_EQ(in0.size(), 3u);
  {  // a flipped tag bit: the device aborts
    SecAggDevice copy = dev[0];
    auto bad = in0;
    bad[1].tag[0] ^= 1;
    EXPECT_EQ(copy.unmask_checked(bad.data(), bad.size(), out, kMaxNeighbours + 1, w).code(), StatusCode::kAborted);
    EXPECT_EQ(copy.phase(), SecAggDevice::Phase::kFailed);
  }
  {  // device 1's tag to device 2, replayed to device 0
    SecAggDevice copy = dev[0];
    auto bad = in0;
    bad[0] = tags[1][1];
    ASSERT_EQ(bad[0].to, 2u);
    bad[0].to = 0;
    EXPECT_EQ(copy.unmask_checked(bad.data(), bad.size(), out, kMaxNeighbours + 1, w).code(), StatusCode::kAborted);
  }
  {  // the same tag twice
    SecAggDevice copy = dev[0];
    auto bad = in0;
    bad[2] = bad[1];
    EXPECT_EQ(copy.unmask_checked(bad.data(), bad.size(), out, kMaxNeighbours + 1, w).code(),
              StatusCode::kInvalidArgument);
  }
  {  // one confirmation where t - 1 = 2 are needed
    SecAggDevice copy = dev[0];
    EXPECT_EQ(copy.unmask_checked(in0.data(), 1, out, kMaxNeighbours + 1, w).code(), StatusCode::kAborted);
  }
  {  // it answers once
    SecAggDevice copy = dev[0];
    ASSERT_TRUE(copy.unmask_checked(in0.data(), in0.size(), out, kMaxNeighbours + 1, w).ok());
    EXPECT_EQ(w, 4u);
    EXPECT_EQ(copy.unmask_checked(in0.data(), in0.size(), out, kMaxNeighbours + 1, w).code(),
              StatusCode::kFailedPrecondition);
  }
}

}  // namespace consistency_test
}  // namespace fedrt::secagg
