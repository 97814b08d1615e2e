// Stochastic federated TD(0) with fixed seeds: the SCAFFLSA paper's claims,
// checked against the theory the project computes.

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/sim/simulator.h"

using namespace fedrt;
using algorithms::LsaAlgorithm;

namespace {

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double Sd(const std::vector<double>& v) {
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Fixture, H=10000, eta=0.01, 50 rounds: both end below 1e-3 (README: noise
// floor ~1e-4, single runs vary ~10x). Two runs each, fixed seed.
TEST(StochasticLsa, FixtureLowHeterogeneityBothBelow1e3) {
  config::ExperimentConfig cfg;
  cfg.problem = task::ProblemKind::kBundle;
  cfg.problem_file = std::string(FEDRT_TEST_DATA) + "/garnet_low_N100.txt";
  cfg.step = 0.01;
  cfg.local_steps = 10000;
  cfg.rounds = 50;
  cfg.runs = 2;
  cfg.seed = 2024;
  cfg.algorithms = {"fedlsa", "scafflsa"};
  auto r = sim::RunExperiment(cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& a : r->algorithms)
    for (const auto& run : a.error) {
      EXPECT_LT(run.back(), 1e-3) << a.name;
      EXPECT_GT(run.back(), 1e-7) << "a stochastic run cannot beat its noise floor by that much";
    }
}

// High heterogeneity (the paper's Figure 1b): FedLSA plateaus at its predicted
// bias, SCAFFLSA goes on to the noise floor.
TEST(StochasticLsa, HighHeterogeneityFedLsaAtBiasScaffLsaFarBelow) {
  config::ExperimentConfig cfg;
  cfg.garnet.heterogeneity = problems::Heterogeneity::kHigh;
  cfg.garnet.agents = 100;
  cfg.step = 0.01;
  cfg.local_steps = 10000;
  cfg.rounds = 50;
  cfg.runs = 1;
  cfg.seed = 7;
  cfg.algorithms = {"fedlsa", "scafflsa"};
  auto r = sim::RunExperiment(cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& fed = r->algorithms[0];
  const auto& scaf = r->algorithms[1];
  ASSERT_TRUE(fed.predicted_bias_sq.has_value());
  const double bias_sq = *fed.predicted_bias_sq;
  EXPECT_GT(bias_sq, 1e-2) << "the instance should be strongly heterogeneous";
  EXPECT_NEAR(fed.error[0].back() / bias_sq, 1.0, 0.10);
  EXPECT_LT(scaf.error[0].back() * 100.0, fed.error[0].back());
}

// H = 1: no heterogeneity bias; FedLSA and SCAFFLSA end at the same noise level.
// (With H = 1 the mean of xi_c stays 0, so the global iterates coincide.)
TEST(StochasticLsa, SingleLocalStepHasNoBias) {
  config::ExperimentConfig cfg;
  cfg.garnet.heterogeneity = problems::Heterogeneity::kHigh;
  cfg.garnet.agents = 100;
  cfg.step = 0.1;
  cfg.local_steps = 1;
  cfg.rounds = 20000;
  cfg.runs = 5;
  cfg.seed = 11;
  cfg.threads = 1;
  cfg.algorithms = {"fedlsa", "scafflsa"};
  auto r = sim::RunExperiment(cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->algorithms[0].predicted_bias_sq.has_value());
  EXPECT_LT(*r->algorithms[0].predicted_bias_sq, 1e-20);
  // Noise level of a run: its mean error over the second half of the rounds.
  std::vector<double> level[2];
  for (int a = 0; a < 2; ++a)
    for (const auto& run : r->algorithms[a].error) {
      double s = 0;
      for (size_t t = run.size() / 2; t < run.size(); ++t) s += run[t];
      level[a].push_back(s / static_cast<double>(run.size() - run.size() / 2));
    }
  const double spread = std::max(Sd(level[0]), Sd(level[1]));
  EXPECT_LT(std::abs(Mean(level[0]) - Mean(level[1])), spread);
  EXPECT_LT(Mean(level[0]), 1e-1) << "the runs should have converged to a noise floor";
}

// Partial participation keeps xi_c on absent agents; the sum of control
// variates stays zero, so SCAFFLSA still removes the bias.
TEST(StochasticLsa, PartialParticipationStillDebiases) {
  config::ExperimentConfig cfg;
  cfg.garnet.heterogeneity = problems::Heterogeneity::kHigh;
  cfg.garnet.agents = 40;
  cfg.step = 0.01;
  cfg.local_steps = 2000;
  cfg.rounds = 150;
  cfg.participation = 0.5;
  cfg.seed = 3;
  cfg.noise_free = true;
  cfg.algorithms = {"fedlsa", "scafflsa", "scafflsa-prob"};
  cfg.comm_prob = 1.0 / 2000;
  auto r = sim::RunExperiment(cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double fed = r->algorithms[0].error[0].back();
  EXPECT_GT(fed, 1e-3);
  EXPECT_LT(r->algorithms[1].error[0].back(), 1e-3 * fed);
  EXPECT_LT(r->algorithms[2].error[0].back(), 1e-2 * fed);
  // About half of the agents report per round.
  double agents = 0;
  for (size_t t = 1; t < r->algorithms[0].agents[0].size(); ++t) agents += r->algorithms[0].agents[0][t];
  EXPECT_NEAR(agents / cfg.rounds, 20.0, 2.0);
}

}  // namespace
