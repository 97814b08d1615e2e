// Softmax regression (fedrt/problems/softmax.h, docs/data.md "Models"): the
// device oracle's gradient is the derivative of its loss (central finite
// differences), the device and host computations agree, Newton's x_star has
// a vanishing gradient, the scores count argmax classes, and shards with a
// label outside 0..K-1 are refused naming the file, line and column.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "fedrt/core/rng.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/problems/softmax.h"
#include "fedrt/report/held_out.h"

namespace fedrt {
namespace {

namespace fs = std::filesystem;
using problems::SoftmaxOracle;

constexpr int kP = 3, kK = 4;

// Agent c of a small data set: labels spread over 0..K-1, features that depend on them.
problems::FedDataset Data(int agents, bool intercept) {
  problems::FedDataset d;
  d.loss = problems::FedLoss::kSoftmax;
  d.dim = kP;
  d.classes = kK;
  d.intercept = intercept;
  for (int c = 0; c < agents; ++c) {
    CounterRng rng(7, 0, static_cast<uint64_t>(c), 0, RngStream::kProblem);
    const int n = 25 + 5 * c;
    problems::MatrixRM x(n, kP);
    Eigen::VectorXd y(n);
    for (int j = 0; j < n; ++j) {
      y[j] = static_cast<double>(rng.below(kK));
      for (int i = 0; i < kP; ++i) x(j, i) = std::cos(1.3 * y[j] * (i + 1) + c) + (rng.uniform() - 0.5);
    }
    d.x.push_back(x);
    d.y.push_back(y);
  }
  return d;
}

Eigen::VectorXd Point(int d, uint64_t seed) {
  CounterRng rng(seed, 0, 0, 0, RngStream::kProblem);
  Eigen::VectorXd x(d);
  for (int i = 0; i < d; ++i) x[i] = 2.0 * rng.uniform() - 1.0;
  return x;
}

class SoftmaxOracleTest : public ::testing::TestWithParam<bool> {};

TEST_P(SoftmaxOracleTest, GradientIsTheDerivativeOfTheLossAndMatchesTheHost) {
  const bool intercept = GetParam();
  const problems::FedDataset data = Data(1, intercept);
  alignas(64) uint8_t mem[1024];
  Arena arena(mem, sizeof mem);
  const double l2 = 0.05;
  auto o = SoftmaxOracle<double>::create(arena, kP, kK, intercept, static_cast<uint32_t>(data.y[0].size()),
                                         data.x[0].data(), data.y[0].data(), l2);
  ASSERT_TRUE(o.ok()) << o.status().message();
  const int d = o->dim();
  ASSERT_EQ(d, kK * (kP + (intercept ? 1 : 0)));
  ASSERT_EQ(d, data.model_dim());
  const Eigen::VectorXd x = Point(d, 3);
  std::vector<double> g(static_cast<size_t>(d));
  CounterRng rng(1);
  o->gradient(x.data(), g.data(), 0, rng);
  const double h = 1e-6;
  for (int i = 0; i < d; ++i) {  // central differences: error O(h^2 f''') + rounding O(eps f / h)
    Eigen::VectorXd up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const double fd = (o->loss(up.data()) - o->loss(down.data())) / (2 * h);
    EXPECT_NEAR(g[static_cast<size_t>(i)], fd, 1e-7) << "coordinate " << i;
  }
  double value = 0;
  Eigen::VectorXd grad;
  problems::SoftmaxLocal(data, 0, l2, x, &value, &grad, nullptr);
  EXPECT_NEAR(value, o->loss(x.data()), 1e-12 * std::abs(value));
  for (int i = 0; i < d; ++i) EXPECT_NEAR(grad[i], g[static_cast<size_t>(i)], 1e-12) << i;
}

TEST_P(SoftmaxOracleTest, HostHessianIsTheDerivativeOfTheHostGradient) {
  const problems::FedDataset data = Data(1, GetParam());
  const int d = data.model_dim();
  const Eigen::VectorXd x = Point(d, 5);
  Eigen::MatrixXd hess;
  problems::SoftmaxLocal(data, 0, 0.05, x, nullptr, nullptr, &hess);
  const double h = 1e-6;
  for (int i = 0; i < d; ++i) {
    Eigen::VectorXd up = x, down = x, gu, gd;
    up[i] += h;
    down[i] -= h;
    problems::SoftmaxLocal(data, 0, 0.05, up, nullptr, &gu, nullptr);
    problems::SoftmaxLocal(data, 0, 0.05, down, nullptr, &gd, nullptr);
    const Eigen::VectorXd fd = (gu - gd) / (2 * h);
    for (int k = 0; k < d; ++k) EXPECT_NEAR(hess(k, i), fd[k], 1e-7) << k << "," << i;
  }
}

TEST_P(SoftmaxOracleTest, MiniBatchGradientIsUnbiased) {
  const bool intercept = GetParam();
  const problems::FedDataset data = Data(1, intercept);
  alignas(64) uint8_t mem[1024];
  Arena arena(mem, sizeof mem);
  auto o = SoftmaxOracle<double>::create(arena, kP, kK, intercept, static_cast<uint32_t>(data.y[0].size()),
                                         data.x[0].data(), data.y[0].data(), 0.01);
  ASSERT_TRUE(o.ok());
  const int d = o->dim();
  const Eigen::VectorXd x = Point(d, 9);
  std::vector<double> full(d), one(d);
  CounterRng unused(1);
  o->gradient(x.data(), full.data(), 0, unused);
  // Mean of M single-sample gradients: each coordinate's deviation is below
  // 5 standard errors, bounded with |softmax - e_y| <= 1 and |z_i| <= 2: 2 / sqrt(M).
  const int m = 40000;
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(d);
  for (int s = 0; s < m; ++s) {
    CounterRng rng(11, 0, 0, static_cast<uint64_t>(s), RngStream::kLocalSteps);
    o->gradient(x.data(), one.data(), 1, rng);
    mean += Eigen::Map<const Eigen::VectorXd>(one.data(), d) / m;
  }
  for (int i = 0; i < d; ++i) EXPECT_NEAR(mean[i], full[static_cast<size_t>(i)], 5 * 2.0 / std::sqrt(m)) << i;
}

INSTANTIATE_TEST_SUITE_P(Intercept, SoftmaxOracleTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "with_intercept" : "without_intercept"; });

TEST(SoftmaxOracle, RefusesBadSettings) {
  alignas(64) uint8_t mem[256];
  Arena arena(mem, sizeof mem);
  const double x[2] = {0.5, -0.5}, y_ok[1] = {1}, y_bad[1] = {3}, y_frac[1] = {0.5};
  EXPECT_FALSE((SoftmaxOracle<double>::create(arena, 2, 3, true, 1, x, y_ok, 0.0).ok()));   // l2 = 0
  EXPECT_FALSE((SoftmaxOracle<double>::create(arena, 2, 1, true, 1, x, y_ok, 0.1).ok()));   // one class
  EXPECT_FALSE((SoftmaxOracle<double>::create(arena, 2, 3, true, 1, x, y_bad, 0.1).ok()));  // label K
  EXPECT_FALSE((SoftmaxOracle<double>::create(arena, 2, 3, true, 1, x, y_frac, 0.1).ok()));
  EXPECT_TRUE((SoftmaxOracle<double>::create(arena, 2, 3, true, 1, x, y_ok, 0.1).ok()));
}

TEST(SoftmaxExactSolution, NewtonGradientVanishesAndScoresCountArgmax) {
  const problems::FedDataset data = Data(3, true);
  const double l2 = 1e-3;
  auto x = problems::ExactSolution(data, l2);
  ASSERT_TRUE(x.ok()) << x.status().message();
  ASSERT_EQ(x->size(), data.model_dim());
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(data.model_dim());
  double f_star = 0;
  for (int c = 0; c < data.agents(); ++c) {
    Eigen::VectorXd g;
    double v;
    problems::SoftmaxLocal(data, c, l2, *x, &v, &g, nullptr);
    mean += g / data.agents();
    f_star += v / data.agents();
  }
  EXPECT_LE(mean.norm(), 1e-12 * (1 + x->norm()));
  // A perturbation in any direction raises f (x_star is the minimiser).
  for (int i = 0; i < data.model_dim(); ++i) {
    Eigen::VectorXd y = *x;
    y[i] += 1e-3;
    double f = 0;
    for (int c = 0; c < data.agents(); ++c) {
      double v;
      problems::SoftmaxLocal(data, c, l2, y, &v, nullptr, nullptr);
      f += v / data.agents();
    }
    EXPECT_GT(f, f_star) << i;
  }
  // Accuracy: the fraction of examples whose largest logit is their label's.
  const report::TestScore s = report::ScoreModel(data, 1, l2, x->data());
  const Eigen::Map<const problems::MatrixRM> w(x->data(), kK, kP + 1);
  long right = 0;
  for (long j = 0; j < data.x[1].rows(); ++j) {
    int best = 0;
    double top = -1e300;
    for (int k = 0; k < kK; ++k) {
      const double z = data.x[1].row(j).dot(w.row(k).head(kP)) + w(k, kP);
      if (z > top) top = z, best = k;
    }
    right += best == static_cast<int>(data.y[1][j]);
  }
  EXPECT_DOUBLE_EQ(s.accuracy, static_cast<double>(right) / data.x[1].rows());
  double v;
  problems::SoftmaxLocal(data, 1, l2, *x, &v, nullptr, nullptr);
  EXPECT_DOUBLE_EQ(s.loss, v);
}

TEST(SoftmaxShard, LabelOutsideTheClassesIsRefusedWithFileLineAndColumn) {
  const fs::path dir = fs::temp_directory_path() / ("fedrt_softmax_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path csv = dir / "device-0.csv";
  std::ofstream(csv) << "a,label,b\n0.5,2,1\n0.1,3,2\n";
  auto bad = data::ReadCsvShard(csv.string(), "label", data::LabelKind::kClass, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()),
            csv.string() + ":3:2 (label): label 3 is not a class of softmax regression with 3 classes (an integer 0..2)");
  std::ofstream(csv) << "a,label,b\n0.5,1.5,1\n";
  auto frac = data::ReadCsvShard(csv.string(), "label", data::LabelKind::kClass, 3);
  ASSERT_FALSE(frac.ok());
  EXPECT_NE(std::string(frac.status().message()).find(":2:2 (label): label 1.5 is not a class of softmax"), std::string::npos);
  std::ofstream(csv) << "a,label,b\n0.5,2,1\n0.1,0,2\n";
  auto ok = data::ReadCsvShard(csv.string(), "label", data::LabelKind::kClass, 4);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->y, (std::vector<double>{2, 0}));
  // The record file refuses it too.
  data::Shard s = *ok;
  s.y[1] = 4;
  ASSERT_TRUE(data::WriteRecordShard((dir / "r.rec").string(), s).ok());
  auto rec = data::ReadRecordShard((dir / "r.rec").string(), data::LabelKind::kClass, 4);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(std::string(rec.status().message()).find("record 1: label 4 is not a class of softmax regression with 4 classes"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fedrt
