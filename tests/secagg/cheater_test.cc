// SecAgg+ against cheating devices (server.h OffShare, shamir_decode.h): a
// device that reveals wrong shares in round 3, or deals shares on two
// polynomials in round 1, is named, its wrong shares are dropped and the sum
// is exact; more cheaters than a sharing can absorb fail the round (never a
// wrong sum).
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "fedrt/core/rng.h"
#include "fedrt/secagg/server.h"
#include "secagg_round.h"
#include "round_fixture.h"

namespace fedrt::secagg {
// Named, not anonymous: this file's helpers stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace cheater_test {

RoundParams Params(uint32_t n, uint32_t k = 0) { return testing::TestParams(n, 40, 16, 11, k, 0xC4EA7); }

struct Inputs : testing::TestInputs {
  explicit Inputs(const RoundParams& p) : TestInputs(p, p.n) {}
};

std::vector<uint32_t> AllBut(uint32_t n, std::set<uint32_t> out) {
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < n; ++i)
    if (!out.count(i)) v.push_back(i);
  return v;
}

// n = 10, complete graph (k = 9, t = 6): b of a survivor has 10 holders (2
// wrong shares can be located), s_sk of a dropout 9 (1 can).
TEST(SecAggCheater, HolderRevealingWrongSharesIsNamedAndTheSumIsExact) {
  const RoundParams p = Params(10);
  ASSERT_EQ(p.k, 9u);
  ASSERT_EQ(p.t, 6u);
  const Inputs in(p);
  std::vector<Cheat> cheats(p.n, Cheat::kNone);
  cheats[3] = Cheat::kWrongUnmaskShares;
  std::vector<DropPoint> drops(p.n, DropPoint::kNone);
  drops[7] = DropPoint::kBeforeMasked;  // its s_sk is rebuilt too, from shares the cheater also lies in
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, drops, 5, nullptr, cheats);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.contributors, AllBut(10, {7}));
  EXPECT_EQ(r.sum, in.sum(AllBut(10, {7})));
  EXPECT_EQ(r.cheaters, std::vector<uint32_t>{3});
  // One wrong share in each of the 10 sharings device 3 answered for: the 9
  // survivors' b (its own included) and device 7's s_sk.
  ASSERT_EQ(r.off_shares.size(), 10u);
  std::set<uint32_t> about;
  for (const OffShare& o : r.off_shares) {
    EXPECT_EQ(o.holder, 3u);
    EXPECT_EQ(o.kind, o.about == 7 ? ShareKind::kMaskKey : ShareKind::kSelfSeed);
    about.insert(o.about);
  }
  EXPECT_EQ(about, (std::set<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));

  // The same round without the cheater: the same sum, nobody named.
  const SimulatedRound honest = RunSimulatedRound(p, in.ptrs, drops, 5);
  ASSERT_TRUE(honest.status.ok()) << honest.status.message();
  EXPECT_EQ(honest.sum, r.sum);
  EXPECT_TRUE(honest.cheaters.empty());
  EXPECT_TRUE(honest.off_shares.empty());
}

// A sparse graph (n = 41, k = 10, t = 6: 11 holders of each b, 2 locatable):
// two cheaters, each named, the sum exact.
TEST(SecAggCheater, TwoCheatersInASparseGraphAreBothNamed) {
  const RoundParams p = Params(41, 10);
  const Inputs in(p);
  std::vector<Cheat> cheats(p.n, Cheat::kNone);
  cheats[12] = cheats[30] = Cheat::kWrongUnmaskShares;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 6, nullptr, cheats);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.sum, in.sum(AllBut(41, {})));
  EXPECT_EQ(r.cheaters, (std::vector<uint32_t>{12, 30}));
  EXPECT_EQ(r.off_shares.size(), 22u);  // each is a holder of 10 neighbours' b and of its own
}

// A dealer that gives two neighbours shares on another polynomial (both through
// its b and s_sk, so they open and look right to the holders): in round 3 the
// two are off the majority's polynomial; the dealer, not the holders, is named.
TEST(SecAggCheater, DealerOfInconsistentSharesIsNamedNotItsHolders) {
  const RoundParams p = Params(10);
  const Inputs in(p);
  std::vector<Cheat> cheats(p.n, Cheat::kNone);
  cheats[4] = Cheat::kInconsistentDealing;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 8, nullptr, cheats);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.device_failures, 0u);
  EXPECT_EQ(r.sum, in.sum(AllBut(10, {})));
  EXPECT_EQ(r.cheaters, std::vector<uint32_t>{4});
  ASSERT_EQ(r.off_shares.size(), 2u);
  for (const OffShare& o : r.off_shares) {
    EXPECT_EQ(o.about, 4u);
    EXPECT_NE(o.holder, 4u);
  }
}

// Three cheaters among the 10 holders of every b (radius 2): the round fails
// with a reason, the sum is not reported.
TEST(SecAggCheater, MoreCheatersThanASharingAbsorbsFailTheRound) {
  const RoundParams p = Params(10);
  const Inputs in(p);
  std::vector<Cheat> cheats(p.n, Cheat::kNone);
  cheats[1] = cheats[2] = cheats[5] = Cheat::kWrongUnmaskShares;
  const SimulatedRound r = RunSimulatedRound(p, in.ptrs, {}, 9, nullptr, cheats);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), StatusCode::kDataLoss);
  EXPECT_NE(std::string(r.status.message()).find("cannot decode"), std::string::npos) << r.status.message();
  EXPECT_TRUE(r.sum.empty());
}

}  // namespace cheater_test
}  // namespace fedrt::secagg
