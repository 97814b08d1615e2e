// TD(0) on observed transitions (fedrt/problems/td_transitions.h, docs/data.md):
// the oracle draws the rows uniformly, its steps and its mean squared TD error
// are the textbook formulas on those rows, the evaluation's theta* solves the
// averaged empirical system, and misfit shards or tables are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "fedrt/config/experiment.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/problems/td_transitions.h"

namespace fedrt::problems {
namespace {

namespace fs = std::filesystem;

// Three transitions in R^2: rows (phi(s), phi(s')), rewards.
const std::vector<double> kX = {1, 0, 0, 1, /**/ 0, 1, 1, 1, /**/ 0.5, 0.5, 1, 0};
const std::vector<double> kR = {1.0, -0.5, 2.0};
constexpr double kGamma = 0.9;

TEST(TdTransitions, DrawsEveryRowUniformly) {
  std::vector<uint8_t> mem(4096);
  Arena arena(mem.data(), mem.size());
  auto o = TdOracleFromTransitions<double>(arena, 2, 3, kGamma, kX.data(), kR.data());
  ASSERT_TRUE(o.ok()) << o.status().message();
  CounterRng rng(42);
  std::vector<int> hits(3, 0);
  constexpr int kDraws = 300000;
  for (int i = 0; i < kDraws; ++i) ++hits[o->sample(rng).state / 2];
  // Binomial(kDraws, 1/3): standard deviation 258; 6 sigma leaves no room for
  // a biased table and no fixed-seed flake.
  for (int h : hits) EXPECT_NEAR(h, kDraws / 3.0, 6 * std::sqrt(kDraws * (1.0 / 3) * (2.0 / 3)));
  for (uint32_t i = 0; i < 3; ++i) {
    const auto& a = o->alias_table()[i];
    EXPECT_EQ(a.next_state, a.state + 1);
    EXPECT_EQ(a.reward, kR[a.state / 2]);
  }
}

TEST(TdTransitions, StepAndMeanSquaredTdErrorFollowTheRows) {
  std::vector<uint8_t> mem(4096);
  Arena arena(mem.data(), mem.size());
  auto o = TdOracleFromTransitions<double>(arena, 2, 3, kGamma, kX.data(), kR.data());
  ASSERT_TRUE(o.ok());
  const double theta[2] = {0.3, -0.7};
  double want = 0.0;
  for (int i = 0; i < 3; ++i) {
    const double* p = &kX[4 * i];
    const double td = p[0] * theta[0] + p[1] * theta[1] - kGamma * (p[2] * theta[0] + p[3] * theta[1]) - kR[i];
    want += td * td / 3.0;
  }
  EXPECT_NEAR(o->mean_squared_td_error(theta), want, 1e-15);
  // One step from a known draw: theta - eta phi(s) (phi(s)^T theta - gamma phi(s')^T theta - r).
  CounterRng rng(7), peek(7);
  const auto& z = o->sample(peek);
  const double* p = &kX[2 * z.state];
  const double td = p[0] * theta[0] + p[1] * theta[1] - kGamma * (p[2] * theta[0] + p[3] * theta[1]) - z.reward;
  Eigen::Vector2d v(theta[0], theta[1]);
  VecMap<double, 2> m(v.data());
  o->step<2>(m, 0.1, rng);
  EXPECT_NEAR(v[0], theta[0] - 0.1 * td * p[0], 1e-15);
  EXPECT_NEAR(v[1], theta[1] - 0.1 * td * p[1], 1e-15);
}

class TdTransitionsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt_tdtr_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "shards");
    for (int c = 0; c < 2; ++c) {
      std::ofstream f(dir_ / "shards" / ("device-" + std::to_string(c) + ".csv"));
      f << "a,b,r,next_a,next_b\n";
      for (int i = 0; i < 3; ++i)
        f << kX[4 * i] << ',' << kX[4 * i + 1] << ',' << kR[i] + c << ',' << kX[4 * i + 2] << ',' << kX[4 * i + 3] << '\n';
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  Status Load(const std::string& extra, config::ExperimentConfig& cfg) {
    std::ofstream(dir_ / "e.toml") << "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\nlabel = \"r\"\n"
                                      "[model]\nkind = \"td0\"\ngamma = 0.9\n" + extra +
                                          "[algorithm]\nnames = [\"fedlsa\"]\n[run]\nrounds = 2\n";
    FEDRT_TRY(config::LoadExperimentToml((dir_ / "e.toml").string(), cfg));
    return config::Validate(cfg);
  }
  fs::path dir_;
};

TEST_F(TdTransitionsConfigTest, ThetaStarSolvesTheAveragedEmpiricalSystem) {
  config::ExperimentConfig cfg;
  ASSERT_TRUE(Load("", cfg).ok());
  auto inst = config::BuildInstance(cfg);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  ASSERT_EQ((*inst)->agents(), 2u);
  EXPECT_EQ((*inst)->problem().dim, 2u);
  Eigen::Matrix2d a = Eigen::Matrix2d::Zero();
  Eigen::Vector2d b = Eigen::Vector2d::Zero();
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 3; ++i) {
      const Eigen::Vector2d p(kX[4 * i], kX[4 * i + 1]), n(kX[4 * i + 2], kX[4 * i + 3]);
      a += p * (p - kGamma * n).transpose() / 3.0;
      b += (kR[i] + c) * p / 3.0;
    }
  const Eigen::Vector2d want = a.lu().solve(b);
  const Eigen::VectorXd& got = (*inst)->td()->lsa.theta_star;
  EXPECT_NEAR(got[0], want[0], 1e-12);
  EXPECT_NEAR(got[1], want[1], 1e-12);
}

TEST_F(TdTransitionsConfigTest, MisfitTablesAndShardsAreRefusedByName) {
  // A held-out file has no score for TD(0).
  Status st;
  config::ExperimentConfig c3;
  {
    std::ofstream f(dir_ / "e.toml");
    f << "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\ntest = \"test.csv\"\nlabel = \"r\"\n[model]\n"
         "kind = \"td0\"\n[algorithm]\nnames = [\"fedlsa\"]\n";
  }
  st = config::LoadExperimentToml((dir_ / "e.toml").string(), c3);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("data.test is scored by least_squares, logistic and softmax models, not by td0"),
            std::string::npos)
      << st.message();
  config::ExperimentConfig c4;
  st = Load("", c4);
  ASSERT_TRUE(st.ok());
  c4.garnet.gamma = 1.0;
  st = config::Validate(c4);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("model.gamma must be in [0, 1)"), std::string::npos) << st.message();
  // An odd number of feature columns cannot split into s and s'.
  std::ofstream(dir_ / "shards" / "device-1.csv") << "a,b,r,next_a\n1,2,3,4\n";
  config::ExperimentConfig c5;
  ASSERT_TRUE(Load("", c5).ok());
  auto inst = config::BuildInstance(c5);
  ASSERT_FALSE(inst.ok());
  EXPECT_NE(std::string(inst.status().message()).find("device-1.csv: 3 feature columns: TD(0) transitions need"),
            std::string::npos)
      << inst.status().message();
}

}  // namespace
}  // namespace fedrt::problems
