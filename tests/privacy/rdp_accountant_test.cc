// The privacy accountant (fedrt/privacy/rdp_accountant.h) against values
// computed independently in 60-digit arithmetic by
// tests/privacy/rdp_reference.py (every A_alpha term summed as written, no
// log-space rewriting), the published two-phase example, the inverse and the
// budget query.
#include "fedrt/privacy/rdp_accountant.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rdp_accountant_test {

using namespace fedrt::privacy;

std::vector<int> Orders(int lo, int hi) {
  std::vector<int> o;
  for (int a = lo; a <= hi; ++a) o.push_back(a);
  return o;
}

void ExpectRel(double got, double want, double rel) {
  EXPECT_NEAR(got, want, rel * std::fabs(want)) << "want " << want;
}

double Rdp(double q, double s, int a) {
  auto r = SampledGaussianRdp(q, s, a);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : NAN;
}

// q = 1e-5, sigma = 1.0, 10 steps, then q = 1e-4, sigma = 3.0, 4 steps, delta
// = 1e-5, orders 2..32: the published epsilon 0.336 at order 23 is the tight
// conversion's; the classic one gives 0.523 at the same order.
TEST(RdpAccountant, PublishedTwoPhaseExample) {
  auto r = Epsilon({{1e-5, 1.0, 10}, {1e-4, 3.0, 4}}, 1e-5, Orders(2, 32));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->order_tight, 23);
  EXPECT_NEAR(r->epsilon_tight, 0.336, 0.0005);  // the published three digits
  ExpectRel(r->epsilon_tight, 0.336344063392595, 1e-9);
  EXPECT_EQ(r->order, 23);
  ExpectRel(r->epsilon, 0.523318290323845, 1e-9);
  ExpectRel(Rdp(1e-5, 1.0, 2), 1.71828182831142e-10, 1e-6);  // A_2 - 1 = q^2 (e - 1): log1p keeps it
  ExpectRel(Rdp(1e-5, 1.0, 23), 3.44238892306136e-7, 1e-9);
  ExpectRel(Rdp(1e-5, 1.0, 24), 0.0239185563384681, 1e-9);
}

// q = 1: the plain Gaussian mechanism, RDP alpha / (2 sigma^2) exactly.
TEST(RdpAccountant, FullParticipationIsThePlainGaussian) {
  EXPECT_DOUBLE_EQ(Rdp(1.0, 2.0, 2), 0.25);
  EXPECT_DOUBLE_EQ(Rdp(1.0, 2.0, 17), 2.125);
  auto r = Epsilon({{1.0, 2.0, 5}}, 1e-5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->order, 5);
  ExpectRel(r->epsilon, 6.00323136624256, 1e-9);
  EXPECT_EQ(r->order_tight, 5);
  ExpectRel(r->epsilon_tight, 5.37772833681982, 1e-9);
}

// DP-FedAvg's regime: q = 0.01, sigma = 1, T = 1000 rounds.
TEST(RdpAccountant, ManyRoundsAtSmallRate) {
  ExpectRel(Rdp(0.01, 1.0, 2), 0.000171813422074548, 1e-9);
  ExpectRel(Rdp(0.01, 1.0, 8), 0.000893643907606032, 1e-9);
  ExpectRel(Rdp(0.01, 1.0, 32), 11.2462759370481, 1e-9);
  auto r = Epsilon({{0.01, 1.0, 1000}}, 1e-5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->order, 8);
  ExpectRel(r->epsilon, 2.53834754545892, 1e-9);
  EXPECT_EQ(r->order_tight, 8);
  ExpectRel(r->epsilon_tight, 2.10775307545157, 1e-9);
}

// A tiny noise multiplier: a huge but finite bound; sigma = 0 is unbounded.
TEST(RdpAccountant, TinyNoiseGivesAHugeBound) {
  ExpectRel(Rdp(0.1, 0.1, 2), 95.3948298140119, 1e-9);
  ExpectRel(Rdp(0.1, 0.1, 256), 12797.6883851615, 1e-9);
  auto r = Epsilon({{0.1, 0.1, 10}}, 1e-5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->order, 2);
  ExpectRel(r->epsilon, 965.461223605089, 1e-9);
  ExpectRel(r->epsilon_tight, 964.074929243969, 1e-9);
  EXPECT_TRUE(std::isinf(Rdp(0.5, 0.0, 4)));
  auto none = Epsilon({{0.5, 0.0, 1}}, 1e-5);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(std::isinf(none->epsilon));
  EXPECT_EQ(none->order, 0);
}

// Composition: phases add, so one phase of 2T rounds equals two of T.
TEST(RdpAccountant, PhasesCompose) {
  auto one = ComposeRdp({{0.02, 1.3, 200}}, DefaultOrders());
  auto two = ComposeRdp({{0.02, 1.3, 120}, {0.02, 1.3, 80}}, DefaultOrders());
  ASSERT_TRUE(one.ok() && two.ok());
  for (size_t i = 0; i < one->size(); ++i) ExpectRel((*two)[i], (*one)[i], 1e-12);
  EXPECT_EQ(DefaultOrders().front(), 2);
  EXPECT_EQ(DefaultOrders().back(), 256);
}

// The inverse: sigma_for(epsilon_of(sigma)) gives sigma back, and its answer
// meets the target while anything 1e-6 below it does not.
TEST(RdpAccountant, NoiseMultiplierRoundTrips) {
  for (auto c : {Conversion::kClassic, Conversion::kTight}) {
    for (double sigma : {0.7, 1.1, 4.0}) {
      auto e = Epsilon({{0.01, sigma, 500}}, 1e-5);
      ASSERT_TRUE(e.ok());
      const double eps = c == Conversion::kClassic ? e->epsilon : e->epsilon_tight;
      auto s = NoiseMultiplierFor(eps, 0.01, 500, 1e-5, c);
      ASSERT_TRUE(s.ok()) << s.status().message();
      ExpectRel(*s, sigma, 1e-7);
    }
    auto s = NoiseMultiplierFor(1.0, 0.01, 1000, 1e-5, c);
    ASSERT_TRUE(s.ok());
    auto at = [&](double sigma) {
      auto e = Epsilon({{0.01, sigma, 1000}}, 1e-5);
      return c == Conversion::kClassic ? e->epsilon : e->epsilon_tight;
    };
    EXPECT_LE(at(*s), 1.0);
    EXPECT_GT(at(*s * (1 - 1e-6)), 1.0);
  }
}

std::string Error(const fedrt::Status& s) { return s.ok() ? "OK" : s.message(); }

TEST(RdpAccountant, BadInputNamesTheParameter) {
  EXPECT_EQ(Error(NoiseMultiplierFor(1.0, 0.0, 10, 1e-5).status()), "rate must be in (0, 1], got 0");
  EXPECT_EQ(Error(NoiseMultiplierFor(1.0, 1.5, 10, 1e-5).status()), "rate must be in (0, 1], got 1.5");
  EXPECT_EQ(Error(NoiseMultiplierFor(1.0, 0.1, 0, 1e-5).status()), "rounds must be at least 1, got 0");
  EXPECT_EQ(Error(NoiseMultiplierFor(1.0, 0.1, 10, 1.0).status()), "delta must be in (0, 1), got 1");
  EXPECT_EQ(Error(NoiseMultiplierFor(1.0, 0.1, 10, 0.0).status()), "delta must be in (0, 1), got 0");
  EXPECT_EQ(Error(NoiseMultiplierFor(0.0, 0.1, 10, 1e-5).status()), "epsilon must be a positive number, got 0");
  EXPECT_EQ(Error(NoiseMultiplierFor(-2.0, 0.1, 10, 1e-5).status()), "epsilon must be a positive number, got -2");
  EXPECT_EQ(Error(SampledGaussianRdp(0.1, -1.0, 2).status()), "noise_multiplier must be a finite number >= 0, got -1");
  EXPECT_EQ(Error(SampledGaussianRdp(0.1, 1.0, 1).status()), "orders must be integers from 2 to 4096, got 1");
  EXPECT_EQ(NoiseMultiplierFor(1.0, 0.1, 0, 1e-5).status().code(), fedrt::StatusCode::kInvalidArgument);
}

// Below log(1/delta)/255 no noise helps with orders up to 256 (classic).
TEST(RdpAccountant, UnreachableEpsilonIsAnError) {
  auto floor = EpsilonFloor(1e-5, Conversion::kClassic);
  ASSERT_TRUE(floor.ok());
  ExpectRel(*floor, std::log(1e5) / 255, 1e-12);
  auto s = NoiseMultiplierFor(0.04, 0.01, 100, 1e-5);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), fedrt::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Error(s.status()), "epsilon 0.04 cannot be reached at delta 1e-05 with orders up to 256: no noise "
                               "multiplier gets epsilon below 0.0451487");
  EXPECT_TRUE(NoiseMultiplierFor(0.05, 0.01, 100, 1e-5).ok());
}

// The incremental accountant equals the batch computation after each round,
// and says before a round whether it would pass the budget.
TEST(RdpAccountant, IncrementalAccountantAndBudget) {
  auto acc = RdpAccountant::Create(1e-5, 2.0);
  ASSERT_TRUE(acc.ok());
  EXPECT_EQ(acc->Spent().epsilon, 0.0);
  uint64_t rounds = 0;
  while (true) {
    auto next = acc->NextRoundExceedsBudget(0.1, 2.0);
    ASSERT_TRUE(next.ok());
    auto after = Epsilon({{0.1, 2.0, rounds + 1}}, 1e-5);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(*next, after->epsilon > 2.0) << "round " << rounds + 1;
    if (*next) break;
    ASSERT_TRUE(acc->AddRounds(0.1, 2.0).ok());
    ++rounds;
    ExpectRel(acc->Spent().epsilon, after->epsilon, 1e-12);
    EXPECT_EQ(acc->Spent().order, after->order);
    ExpectRel(acc->Spent().epsilon_tight, after->epsilon_tight, 1e-12);
  }
  EXPECT_EQ(acc->rounds(), rounds);
  EXPECT_LE(acc->Spent().epsilon, 2.0);
  EXPECT_EQ(rounds, 39u);  // epsilon 1.98854 after 39 rounds, above 2 after 40
  EXPECT_EQ(Error(acc->AddRounds(0.1, 2.0, 0)), "rounds must be at least 1, got 0");
  EXPECT_EQ(acc->rounds(), rounds);
  EXPECT_EQ(Error(RdpAccountant::Create(1e-5, 0.0).status()), "epsilon_budget must be positive, got 0");
  // The tight conversion allows more rounds under the same budget.
  auto tight = RdpAccountant::Create(1e-5, 2.0, Conversion::kTight);
  ASSERT_TRUE(tight.ok());
  ASSERT_TRUE(tight->AddRounds(0.1, 2.0, rounds + 1).ok());
  EXPECT_LE(tight->Spent().epsilon_tight, 2.0);
}

}  // namespace rdp_accountant_test
