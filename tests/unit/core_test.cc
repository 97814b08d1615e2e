// Core: Status/Result, Arena, counter-based RNG, alias sampling, TD(0) oracle.

#include <cstring>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/garnet.h"
#include "fedrt/problems/td_oracle.h"

using namespace fedrt;

namespace {

Status FailsWhenNegative(int x) {
  if (x < 0) return Status::InvalidArgument("negative");
  return Status::Ok();
}
Status Chain(int x) {
  FEDRT_TRY(FailsWhenNegative(x));
  return Status::Ok();
}
Result<int> Twice(int x) {
  if (x > 100) return Status::OutOfRange("too big");
  return 2 * x;
}
Result<int> TwicePlusOne(int x) {
  int y = 0;
  FEDRT_ASSIGN_OR_RETURN(y, Twice(x));
  return y + 1;
}

TEST(Status, TryPropagatesFirstError) {
  EXPECT_TRUE(Chain(1).ok());
  Status s = Chain(-1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_STREQ(s.message(), "negative");
  EXPECT_STREQ(StatusCodeName(s.code()), "INVALID_ARGUMENT");
}

TEST(Result, AssignOrReturn) {
  auto r = TwicePlusOne(3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 7);
  auto e = TwicePlusOne(1000);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kOutOfRange);
}

TEST(Arena, AllocatesAlignedZeroedAndReportsUse) {
  StaticArena<256> arena;
  auto a = arena.allocate<double>(4);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % Arena::kAlignment, 0u);
  for (double v : *a) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(arena.used(), 32u);
  auto b = arena.allocate<uint8_t>(1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(arena.used(), 33u);
  auto c = arena.allocate<double>(2);  // aligned up to 48, ends at 64
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(arena.used(), 64u);
}

// A zeroed (calloc'd) buffer: memory handed out before is cleared again after
// release_to; memory never handed out is not written (the sentinel shows it).
TEST(Arena, ZeroedBufferClearsOnlyWhatWasHandedOut) {
  alignas(64) uint8_t buf[128] = {};
  Arena arena(buf, sizeof buf, /*zeroed=*/true);
  const size_t mark = arena.mark();
  auto a = arena.allocate<uint8_t>(32);
  ASSERT_TRUE(a.ok());
  std::memset(a->data, 0xAB, 32);  // dirty it
  buf[100] = 0x5A;                 // never handed out: a zeroed arena must not touch it
  arena.release_to(mark);
  auto b = arena.allocate<uint8_t>(48);  // 32 reused bytes and 16 fresh ones
  ASSERT_TRUE(b.ok());
  for (size_t i = 0; i < 48; ++i) EXPECT_EQ(b->data[i], 0) << i;
  auto c = arena.allocate<uint8_t>(64);  // bytes 48..112, including the sentinel
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(buf[100], 0x5A) << "fresh memory of a zeroed buffer is left as it is";
  Arena plain(buf, sizeof buf);  // the default clears everything it hands out
  ASSERT_TRUE(plain.allocate<uint8_t>(128).ok());
  EXPECT_EQ(buf[100], 0);
}

TEST(Arena, FailsWithStatusWhenFull) {
  StaticArena<64> arena;
  ASSERT_TRUE(arena.allocate<double>(8).ok());
  auto r = arena.allocate<double>(1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(arena.used(), 64u);  // a failed allocation consumes nothing
}

TEST(CounterRng, SameKeySameStreamAndStepAddressable) {
  CounterRng a(7, 1, 2, 3, RngStream::kLocalSteps), b(7, 1, 2, 3, RngStream::kLocalSteps);
  std::vector<uint64_t> xs;
  for (int i = 0; i < 100; ++i) {
    xs.push_back(a.next_u64());
    EXPECT_EQ(xs.back(), b.next_u64());
  }
  // Step-addressable: jumping to step 50 gives draw 50.
  CounterRng c(RngKey(7, 1, 2, 3, RngStream::kLocalSteps), 50);
  EXPECT_EQ(c.next_u64(), xs[50]);
  // Any coordinate of the key changes the stream.
  for (CounterRng d : {CounterRng(8, 1, 2, 3, RngStream::kLocalSteps), CounterRng(7, 2, 2, 3, RngStream::kLocalSteps),
                       CounterRng(7, 1, 3, 3, RngStream::kLocalSteps), CounterRng(7, 1, 2, 4, RngStream::kLocalSteps),
                       CounterRng(7, 1, 2, 3, RngStream::kParticipation)})
    EXPECT_NE(d.next_u64(), xs[0]);
}

TEST(CounterRng, UniformMomentsWithinMonteCarloTolerance) {
  CounterRng r(123, 0, 0, 0, RngStream::kLocalSteps);
  const int n = 1 << 20;
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    s += u;
    s2 += u * u;
  }
  // sd of the mean: sqrt(1/12 / n) = 2.8e-4; 5 sigma.
  EXPECT_NEAR(s / n, 0.5, 5 * 2.8e-4);
  EXPECT_NEAR(s2 / n, 1.0 / 3.0, 5 * 2.9e-4);
}

// Alias sampling reproduces the weights: chi-square with fixed seed.
TEST(TdOracle, AliasTableSamplesTheJointLaw) {
  const int n = 3, d = 2;
  const double phi[] = {1, 0, 0, 1, 0.5, 0.5};
  const double reward[] = {0.1, 0.2, 0.3};
  const double joint[] = {0.10, 0.05, 0.00,  //
                          0.00, 0.30, 0.05,  //
                          0.25, 0.00, 0.25};
  StaticArena<4096> arena;
  auto o = problems::TdOracle<double>::create(arena, d, n, 0.9, phi, reward, joint);
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->atoms(), 6u);
  CounterRng rng(5, 0, 0, 0, RngStream::kLocalSteps);
  const int draws = 200000;
  std::vector<int> counts(9, 0);
  for (int i = 0; i < draws; ++i) {
    const auto& z = o->sample(rng);
    ++counts[z.state * n + z.next_state];
    ASSERT_DOUBLE_EQ(z.reward, reward[z.state]);
  }
  double chi2 = 0;
  for (int k = 0; k < 9; ++k) {
    if (joint[k] == 0.0) {
      EXPECT_EQ(counts[k], 0) << "zero-probability pair drawn";
      continue;
    }
    const double e = joint[k] * draws;
    chi2 += (counts[k] - e) * (counts[k] - e) / e;
  }
  EXPECT_LT(chi2, 20.5);  // chi-square with 5 dof: P(> 20.5) = 0.001
}

// The rank-one O(d) step equals theta - eta (A(Z) theta - b(Z)) with A formed densely.
TEST(TdOracle, RankOneStepEqualsDenseLsaStep) {
  problems::GarnetConfig g;
  g.agents = 2;
  g.heterogeneity = problems::Heterogeneity::kHigh;
  auto p = problems::GenerateGarnet(g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<uint8_t> mem(1 << 16);
  Arena arena(mem.data(), mem.size());
  const auto joint = p->joint_law(1);
  auto o = problems::TdOracle<double>::create(arena, p->dim, p->n_states, p->gamma, p->phi.data(),
                                              p->reward[1].data(), joint.data());
  ASSERT_TRUE(o.ok());
  Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(8, -1.0, 2.0);
  for (int k = 0; k < 50; ++k) {
    CounterRng r1(9, 0, 1, k, RngStream::kLocalSteps), r2(9, 0, 1, k, RngStream::kLocalSteps);
    const auto& z = o->sample(r2);
    const Eigen::VectorXd ps = p->phi.row(z.state).transpose(), pn = p->phi.row(z.next_state).transpose();
    const Eigen::MatrixXd a = ps * (ps - p->gamma * pn).transpose();
    const Eigen::VectorXd b = p->reward[1](z.state) * ps;
    const Eigen::VectorXd expect = theta - 0.05 * (a * theta - b);
    Eigen::VectorXd got = theta;
    VecMap<double, 8> m(got.data());
    o->step<8>(m, 0.05, r1);
    EXPECT_LT((got - expect).norm(), 1e-14);
    theta = got;
  }
}

// E[A(Z) theta - b(Z)] = Abar_c theta - bbar_c: Monte Carlo over the oracle.
TEST(TdOracle, StepIsUnbiasedForTheExpectedOperator) {
  problems::GarnetConfig g;
  g.agents = 1;
  auto p = problems::GenerateGarnet(g);
  ASSERT_TRUE(p.ok());
  std::vector<uint8_t> mem(1 << 16);
  Arena arena(mem.data(), mem.size());
  const auto joint = p->joint_law(0);
  auto o = problems::TdOracle<double>::create(arena, p->dim, p->n_states, p->gamma, p->phi.data(),
                                              p->reward[0].data(), joint.data());
  ASSERT_TRUE(o.ok());
  const Eigen::VectorXd theta = Eigen::VectorXd::Constant(8, 3.0);
  const int n = 400000;
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(8), sq = Eigen::VectorXd::Zero(8);
  CounterRng rng(77, 0, 0, 0, RngStream::kLocalSteps);
  for (int i = 0; i < n; ++i) {
    Eigen::VectorXd t = theta;
    VecMap<double, 8> m(t.data());
    o->step<8>(m, 1.0, rng);  // t = theta - (A theta - b)
    const Eigen::VectorXd g = theta - t;
    mean += g;
    sq += g.cwiseProduct(g);
  }
  mean /= n;
  const Eigen::VectorXd sd = ((sq / n - mean.cwiseProduct(mean)) / n).cwiseSqrt();
  const Eigen::VectorXd expect = p->lsa.abar[0] * theta - p->lsa.bbar[0];
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(mean[i], expect[i], 5 * sd[i] + 1e-12) << "coordinate " << i;
}

TEST(ExpectedOracle, StepIsExactLsaStep) {
  const double a[] = {2, 1, 0, 3};
  const double b[] = {1, -1};
  StaticArena<512> arena;
  auto o = problems::ExpectedLsaOracle<double>::create(arena, 2, a, b);
  ASSERT_TRUE(o.ok());
  double th[] = {1.0, 2.0};
  VecMap<double, Eigen::Dynamic> m(th, 2);
  CounterRng rng(1);
  o->step<Eigen::Dynamic>(m, 0.1, rng);
  EXPECT_DOUBLE_EQ(th[0], 1.0 - 0.1 * (2 * 1 + 1 * 2 - 1));
  EXPECT_DOUBLE_EQ(th[1], 2.0 - 0.1 * (3 * 2 + 1));
}

}  // namespace
