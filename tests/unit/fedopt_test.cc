// Federated optimisation family: closed-form fixed points of FedAvg
// and FedProx on least squares, Scaffold's exactness, the FedLSA bias as
// FedAvg's plateau, x_star for logistic, device cores, CSV loading errors.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/algorithms/fedopt.h"
#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/analysis/fedopt_theory.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/problems/logistic.h"
#include "fedrt/sim/simulator.h"
#include "heterogeneous_lsq.h"

namespace fedrt {
namespace {

using config::ExperimentConfig;
using task::ProblemKind;

ExperimentConfig HeterogeneousLsq() { return HeterogeneousLsqSetting(1000); }

double RelDiff(const Eigen::VectorXd& a, const Eigen::VectorXd& b) { return (a - b).norm() / b.norm(); }

TEST(FedOpt, DeterministicFedAvgAndFedProxReachTheirClosedFormPoints) {
  ExperimentConfig c = HeterogeneousLsq();
  c.algorithms = {"fedavg", "fedprox-exact"};
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto data = sim::BuildFedData(c);
  ASSERT_TRUE(data.ok());
  auto lsq = problems::LeastSquaresSystem(*data);
  ASSERT_TRUE(lsq.ok());
  const Eigen::VectorXd x_ols = lsq->theta_star;
  auto fedavg_point = analysis::FedAvgFixedPoint(*lsq, c.step, c.local_steps);
  auto fedprox_point = analysis::FedProxFixedPoint(*lsq, c.opt.prox_mu);
  ASSERT_TRUE(fedavg_point.ok() && fedprox_point.ok());
  EXPECT_LT(RelDiff(r->algorithms[0].final_theta[0], *fedavg_point), 1e-8);
  EXPECT_LT(RelDiff(r->algorithms[1].final_theta[0], *fedprox_point), 1e-8);
  // Heterogeneity moves both points away from OLS.
  EXPECT_GT(RelDiff(*fedavg_point, x_ols), 1e-3);
  EXPECT_GT(RelDiff(*fedprox_point, x_ols), 1e-3);
  EXPECT_TRUE(r->problem.extra.contains("zeta1"));
  EXPECT_GT(r->problem.extra["zeta1"].get<double>(), 0.0);
  EXPECT_GT(r->problem.extra["zeta2"].get<double>(), 0.0);
}

TEST(FedOpt, OneLocalStepFedAvgIsOls) {
  ExperimentConfig c = HeterogeneousLsq();
  c.local_steps = 1;
  c.rounds = 4000;
  c.algorithms = {"fedavg"};
  auto data = sim::BuildFedData(c);
  ASSERT_TRUE(data.ok());
  auto lsq = problems::LeastSquaresSystem(*data);
  ASSERT_TRUE(lsq.ok());
  auto p = analysis::FedAvgFixedPoint(*lsq, c.step, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_LT(RelDiff(*p, lsq->theta_star), 1e-12);
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LT(RelDiff(r->algorithms[0].final_theta[0], lsq->theta_star), 1e-8);
}

TEST(FedOpt, ScaffoldIsExactWhereFedAvgPlateausAtThePredictedBias) {
  ExperimentConfig c = HeterogeneousLsq();
  c.algorithms = {"fedavg", "scaffold"};
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& fedavg = r->algorithms[0];
  const auto& scaffold = r->algorithms[1];
  EXPECT_LT((scaffold.final_theta[0] - r->problem.theta_star).norm(), 1e-10);
  ASSERT_TRUE(fedavg.predicted_bias_sq.has_value());
  const double plateau = fedavg.error[0].back();
  EXPECT_GT(plateau, 1e-6);  // FedAvg stops at its bias
  EXPECT_NEAR(plateau / *fedavg.predicted_bias_sq, 1.0, 0.05);
  ASSERT_TRUE(scaffold.predicted_bias_sq.has_value());
  EXPECT_EQ(*scaffold.predicted_bias_sq, 0.0);
}

TEST(FedOpt, LogisticExactSolutionIsStationary) {
  problems::FedDataConfig g;
  g.agents = 6;
  g.dim = 4;
  g.samples = 80;
  g.covariate_shift = 0.5;
  g.concept_shift = 2.0;
  g.seed = 5;
  auto data = problems::GenerateFedData(problems::FedLoss::kLogistic, g);
  ASSERT_TRUE(data.ok());
  const double l2 = 0.05;
  auto x = problems::ExactSolution(*data, l2);
  ASSERT_TRUE(x.ok()) << x.status().message();
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(4);
  for (int c = 0; c < data->agents(); ++c) {
    Eigen::VectorXd gc;
    problems::LogisticLocal(*data, c, l2, *x, nullptr, &gc, nullptr);
    grad += gc / data->agents();
  }
  EXPECT_LT(grad.norm(), 1e-12);
  // Labels are +-1, quantity skew 0 gives n_c = samples.
  for (int c = 0; c < data->agents(); ++c) {
    EXPECT_EQ(data->x[c].rows(), 80);
    for (long j = 0; j < data->y[c].size(); ++j) EXPECT_TRUE(data->y[c][j] == 1.0 || data->y[c][j] == -1.0);
  }
}

TEST(FedOpt, QuantitySkewChangesAgentSizes) {
  problems::FedDataConfig g;
  g.agents = 8;
  g.dim = 3;
  g.samples = 100;
  g.quantity_skew = 1.0;
  auto data = problems::GenerateFedData(problems::FedLoss::kLeastSquares, g);
  ASSERT_TRUE(data.ok());
  long mn = 1 << 30, mx = 0;
  for (auto& m : data->x) {
    mn = std::min<long>(mn, m.rows());
    mx = std::max<long>(mx, m.rows());
  }
  EXPECT_GT(mx, 2 * mn);
}

// A device generates its own agent's data only: the same numbers as in the
// whole problem (each agent has its own random stream), and no rows for the others.
TEST(FedOpt, OneAgentsDataIsTheSameAsInTheWholeProblem) {
  problems::FedDataConfig g;
  g.agents = 5;
  g.dim = 4;
  g.samples = 30;
  g.covariate_shift = 0.5;
  g.quantity_skew = 0.5;
  auto all = problems::GenerateFedData(problems::FedLoss::kLeastSquares, g);
  g.only_agent = 3;
  auto one = problems::GenerateFedData(problems::FedLoss::kLeastSquares, g);
  ASSERT_TRUE(all.ok() && one.ok());
  ASSERT_EQ(one->x.size(), 5u);
  for (int c = 0; c < 5; ++c) {
    if (c == 3) {
      EXPECT_TRUE(one->x[c] == all->x[c]);
      EXPECT_TRUE(one->y[c] == all->y[c]);
    } else {
      EXPECT_EQ(one->x[c].rows(), 0);
      EXPECT_EQ(one->y[c].size(), 0);
    }
  }
}

TEST(FedOpt, ExactProxMatchesNormalEquations) {
  const int d = 3;
  const double x[] = {1, 0, 2, 0, 1, 1, 3, 1, 0, 1, 1, 1};
  const double y[] = {1, 2, 3, 4};
  alignas(64) uint8_t mem[1024];
  Arena arena(mem, sizeof(mem));
  const double mu = 0.7;
  auto o = problems::LeastSquaresOracle<double>::create(arena, d, 4, x, y, mu);
  ASSERT_TRUE(o.ok());
  const double xt[] = {0.3, -0.2, 0.5};
  double out[3];
  o->prox(xt, out);
  Eigen::Map<const Eigen::Matrix<double, 4, 3, Eigen::RowMajor>> X(x);
  Eigen::Map<const Eigen::Vector4d> Y(y);
  const Eigen::Matrix3d A = X.transpose() * X / 4.0 + mu * Eigen::Matrix3d::Identity();
  const Eigen::Vector3d want = A.ldlt().solve(X.transpose() * Y / 4.0 + mu * Eigen::Map<const Eigen::Vector3d>(xt));
  for (int i = 0; i < d; ++i) EXPECT_NEAR(out[i], want[i], 1e-13);
}

TEST(FedOpt, ClientFailsCleanlyWhenTheArenaIsTooSmall) {
  // An arena of 64 bytes over a larger buffer (GCC's -Warray-bounds otherwise
  // warns about the allocation path the capacity check never lets run).
  alignas(64) uint8_t mem[512];
  Arena arena(mem, 64);
  algorithms::FedOptHyper<double> h;
  auto c = algorithms::FedOptClient<double>::create(arena, 8, h);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
}

TEST(FedOpt, ResultsDoNotDependOnThreadCount) {
  ExperimentConfig c = HeterogeneousLsq();
  c.rounds = 30;
  c.runs = 2;
  c.opt.batch = 2;
  c.participation = 0.7;
  c.algorithms = {"fedavg", "scaffold", "fedprox", "fedavg-rr"};
  for (int variant = 0; variant < 2; ++variant) {
    if (variant == 1) {  // enough work per round that the worker pool is used
      c.problem = ProblemKind::kLogistic;
      c.opt.batch = 0;
      c.opt.samples = 200;
      c.local_steps = 50;
      c.rounds = 6;
      c.algorithms = {"fedavg", "scaffold", "fedprox", "fedavg-rr"};
    }
    c.threads = 1;
    auto a = sim::RunExperiment(c);
    c.threads = 3;
    auto b = sim::RunExperiment(c);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok()) << b.status().message();
    for (size_t k = 0; k < a->algorithms.size(); ++k)
      for (size_t run = 0; run < 2; ++run) EXPECT_EQ(a->algorithms[k].error[run], b->algorithms[k].error[run]);
  }
}

TEST(FedOpt, FedProxExactIsRejectedForLogistic) {
  ExperimentConfig c = HeterogeneousLsq();
  c.problem = ProblemKind::kLogistic;
  c.algorithms = {"fedprox-exact"};
  auto r = sim::RunExperiment(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("fedprox-exact"), std::string::npos);
}

// ---- CSV loading ------------------------------------------------------------

class FedCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("fedopt_csv_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string Error(problems::FedLoss loss, const std::string& path) {
    auto r = problems::LoadFedDataCsv(loss, path);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.status().message();
  }
  std::filesystem::path dir_;
};

TEST_F(FedCsv, DirectoryAndSingleFileGiveTheSameData) {
  Write("a0.csv", "y,x1,x2\n1.5,1,2\n-0.5,3,4\n");
  Write("a1.csv", "# agent 1\n2,5,6\n");
  const std::string one = Write("all.txt", "agent,y,x1,x2\n0,1.5,1,2\n1,2,5,6\n0,-0.5,3,4\n");
  auto a = problems::LoadFedDataCsv(problems::FedLoss::kLeastSquares, dir_.string());
  auto b = problems::LoadFedDataCsv(problems::FedLoss::kLeastSquares, one);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(a->agents(), 2);
  ASSERT_EQ(b->agents(), 2);
  EXPECT_EQ(a->dim, 2);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(a->x[c], b->x[c]);
    EXPECT_EQ(a->y[c], b->y[c]);
  }
  EXPECT_EQ(a->x[0](1, 0), 3.0);
}

TEST_F(FedCsv, WrongColumnCountNamesFileAndLine) {
  const std::string f = Write("a0.csv", "1,2,3\n4,5\n");
  const std::string e = Error(problems::FedLoss::kLeastSquares, dir_.string());
  EXPECT_NE(e.find(f + ":2: expected 3 columns (as on line 1), got 2"), std::string::npos) << e;
}

TEST_F(FedCsv, NonNumericCellNamesFileLineAndColumn) {
  const std::string f = Write("data.csv", "agent,y,x1\n0,1,2\n0,abc,3\n");
  const std::string e = Error(problems::FedLoss::kLeastSquares, f);
  EXPECT_NE(e.find(f + ":3: column 2: 'abc' is not a number"), std::string::npos) << e;
}

TEST_F(FedCsv, AgentWithoutRows) {
  Write("a0.csv", "1,2\n");
  const std::string empty = Write("a1.csv", "y,x1\n");
  std::string e = Error(problems::FedLoss::kLeastSquares, dir_.string());
  EXPECT_NE(e.find(empty + ": agent 1 has no rows"), std::string::npos) << e;
  const std::string f = Write("gap.txt", "0,1,2\n2,1,2\n");
  e = Error(problems::FedLoss::kLeastSquares, f);
  EXPECT_NE(e.find(f + ": agent 1 has no rows"), std::string::npos) << e;
}

TEST_F(FedCsv, MismatchedDimensionsAcrossAgents) {
  const std::string f0 = Write("a0.csv", "1,2,3\n");
  const std::string f1 = Write("a1.csv", "\n1,2\n");
  const std::string e = Error(problems::FedLoss::kLeastSquares, dir_.string());
  EXPECT_NE(e.find(f1 + ":2: 1 features, but " + f0 + " has 2"), std::string::npos) << e;
}

TEST_F(FedCsv, LogisticLabelsMustBeBinary) {
  const std::string f = Write("data.csv", "0,1,2\n0,0.5,3\n");
  const std::string e = Error(problems::FedLoss::kLogistic, f);
  EXPECT_NE(e.find(f + ":2: logistic label 0.5"), std::string::npos) << e;
  const std::string ok = Write("ok.csv", "0,1,2\n0,0,3\n");
  auto r = problems::LoadFedDataCsv(problems::FedLoss::kLogistic, ok);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->y[0][1], -1.0);
}

}  // namespace
}  // namespace fedrt
