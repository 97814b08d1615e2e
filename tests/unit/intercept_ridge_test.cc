// Least squares and logistic regression with an intercept and L2 (docs/data.md
// "Models"): the device oracles, which read rows of p features in place and
// add the intercept's constant themselves (as a microcontroller must), equal
// the oracles over rows (a, 1) that the host builds; ridge least squares
// solves its regularised normal equations; an intercept recovers an offset
// exactly; and the experiment keys give the task d = p + 1 and l2 for least
// squares only when it is set.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/config/experiment.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/problems/logistic.h"

namespace fedrt {
namespace {

using problems::LeastSquaresOracle;
using problems::LogisticOracle;

constexpr int kFeatures = 3;
constexpr uint32_t kN = 30;

struct Rows {
  std::vector<double> a, z, y;  // a: n x p; z: n x (p + 1) = (a, 1); y: labels
};

Rows MakeRows(bool binary) {
  Rows r;
  CounterRng rng(11, 0, 0, 0, RngStream::kProblem);
  for (uint32_t j = 0; j < kN; ++j) {
    double s = 0.7;
    for (int k = 0; k < kFeatures; ++k) {
      const double v = 2.0 * rng.uniform() - 1.0;
      r.a.push_back(v);
      r.z.push_back(v);
      s += (k + 1) * v;
    }
    r.z.push_back(1.0);
    r.y.push_back(binary ? (s + 0.3 * (rng.uniform() - 0.5) > 0 ? 1.0 : -1.0) : s + 0.1 * (rng.uniform() - 0.5));
  }
  return r;
}

double MaxAbs(const std::vector<double>& u, const std::vector<double>& v) {
  double m = 0;
  for (size_t i = 0; i < u.size(); ++i) m = std::max(m, std::fabs(u[i] - v[i]));
  return m;
}

// Full and mini-batch gradients (same draws) and losses at a few points.
template <class O>
void ExpectSameOracle(const O& inplace, const O& augmented) {
  const int d = kFeatures + 1;
  for (int t = 0; t < 3; ++t) {
    std::vector<double> x(d), g1(d), g2(d);
    for (int k = 0; k < d; ++k) x[k] = std::sin(1.0 + t + 0.5 * k);
    for (uint32_t batch : {0u, 5u}) {
      CounterRng r1(3, 0, static_cast<uint64_t>(t), 0, RngStream::kLocalSteps);
      CounterRng r2(3, 0, static_cast<uint64_t>(t), 0, RngStream::kLocalSteps);
      inplace.gradient(x.data(), g1.data(), batch, r1);
      augmented.gradient(x.data(), g2.data(), batch, r2);
      EXPECT_LT(MaxAbs(g1, g2), 1e-13) << "batch " << batch;
    }
    EXPECT_NEAR(inplace.loss(x.data()), augmented.loss(x.data()), 1e-13);
  }
}

TEST(Intercept, LeastSquaresInPlaceEqualsTheOracleOverAugmentedRows) {
  const Rows r = MakeRows(false);
  std::vector<unsigned char> mem(1 << 14);
  Arena arena(mem.data(), mem.size());
  auto in = LeastSquaresOracle<double>::create(arena, kFeatures + 1, kN, r.a.data(), r.y.data(), 0.5, 0.05, true);
  auto aug = LeastSquaresOracle<double>::create(arena, kFeatures + 1, kN, r.z.data(), r.y.data(), 0.5, 0.05, false);
  ASSERT_TRUE(in.ok() && aug.ok());
  const int d = kFeatures + 1;
  EXPECT_LT(MaxAbs(std::vector<double>(in->abar(), in->abar() + d * d),
                   std::vector<double>(aug->abar(), aug->abar() + d * d)), 1e-15);
  EXPECT_LT(MaxAbs(std::vector<double>(in->bbar(), in->bbar() + d), std::vector<double>(aug->bbar(), aug->bbar() + d)),
            1e-15);
  ExpectSameOracle(*in, *aug);
  std::vector<double> xt(d, 0.3), p1(d), p2(d);  // the exact prox includes the ridge term
  in->prox(xt.data(), p1.data());
  aug->prox(xt.data(), p2.data());
  EXPECT_LT(MaxAbs(p1, p2), 1e-13);
  EXPECT_FALSE(LeastSquaresOracle<double>::create(arena, 1, kN, r.a.data(), r.y.data(), 0, 0, true).ok());
  EXPECT_FALSE(LeastSquaresOracle<double>::create(arena, 2, kN, r.a.data(), r.y.data(), 0, -1.0).ok());
}

TEST(Intercept, LogisticInPlaceEqualsTheOracleOverAugmentedRows) {
  const Rows r = MakeRows(true);
  std::vector<unsigned char> mem(64);
  Arena arena(mem.data(), mem.size());
  auto in = LogisticOracle<double>::create(arena, kFeatures + 1, kN, r.a.data(), r.y.data(), 0.02, true);
  auto aug = LogisticOracle<double>::create(arena, kFeatures + 1, kN, r.z.data(), r.y.data(), 0.02, false);
  ASSERT_TRUE(in.ok() && aug.ok());
  ExpectSameOracle(*in, *aug);
}

// Two agents' shards through AppendShard: X_c gains the column of ones.
problems::FedDataset TwoAgents(double offset, double noise) {
  problems::FedDataset data;
  data.loss = problems::FedLoss::kLeastSquares;
  data.intercept = true;
  for (int c = 0; c < 2; ++c) {
    data::Shard s;
    s.dim = 2;
    s.path = "agent" + std::to_string(c);
    for (int j = 0; j < 12 + 5 * c; ++j) {
      const double u = std::sin(0.9 * j + c), v = std::cos(1.7 * j - 2.0 * c);
      s.x.insert(s.x.end(), {u, v});
      s.y.push_back(offset + 2.0 * u - 1.5 * v + noise * std::sin(7.3 * j + c));
    }
    EXPECT_TRUE(problems::AppendShard(data, s).ok());
  }
  return data;
}

TEST(Intercept, AnInterceptRecoversAnOffsetExactly) {
  const problems::FedDataset data = TwoAgents(3.0, 0.0);
  EXPECT_EQ(data.dim, 3);
  EXPECT_EQ(data.features(), 2);
  EXPECT_EQ(data.x[1](4, 2), 1.0);
  auto x = problems::ExactSolution(data, 0.0);
  ASSERT_TRUE(x.ok()) << x.status().message();
  EXPECT_NEAR((*x)[0], 2.0, 1e-12);
  EXPECT_NEAR((*x)[1], -1.5, 1e-12);
  EXPECT_NEAR((*x)[2], 3.0, 1e-12);
}

// Ridge: x_star = (mean_c Z_c^T Z_c / n_c + l2 I)^{-1} mean_c Z_c^T y_c / n_c,
// and the mean of the device oracles' full gradients vanishes there.
TEST(Ridge, LeastSquaresSolvesTheRegularisedNormalEquations) {
  const double l2 = 0.3;
  const problems::FedDataset data = TwoAgents(1.0, 0.2);
  Eigen::MatrixXd h = Eigen::MatrixXd::Identity(3, 3) * l2;
  Eigen::VectorXd b = Eigen::VectorXd::Zero(3);
  for (int c = 0; c < 2; ++c) {
    const double n = static_cast<double>(data.x[c].rows());
    h += 0.5 * data.x[c].transpose() * data.x[c] / n;
    b += 0.5 * data.x[c].transpose() * data.y[c] / n;
  }
  const Eigen::VectorXd want = h.ldlt().solve(b);
  auto x = problems::ExactSolution(data, l2);
  ASSERT_TRUE(x.ok()) << x.status().message();
  EXPECT_LT((*x - want).norm(), 1e-12);
  auto unregularised = problems::ExactSolution(data, 0.0);
  ASSERT_TRUE(unregularised.ok());
  EXPECT_GT((*unregularised - want).norm(), 1e-3);  // l2 = 0.3 moves the solution
  std::vector<unsigned char> mem(1 << 12);
  Arena arena(mem.data(), mem.size());
  std::vector<double> g(3), mean(3, 0.0);
  for (int c = 0; c < 2; ++c) {
    auto o = LeastSquaresOracle<double>::create(arena, 3, static_cast<uint32_t>(data.x[c].rows()), data.x[c].data(),
                                                data.y[c].data(), 0.0, l2);
    ASSERT_TRUE(o.ok());
    CounterRng rng(1, 0, 0, 0, RngStream::kLocalSteps);
    o->gradient(x->data(), g.data(), 0, rng);
    for (int k = 0; k < 3; ++k) mean[k] += 0.5 * g[k];
  }
  EXPECT_LT(MaxAbs(mean, {0, 0, 0}), 1e-13);
}

// The experiment keys: intercept gives d = p + 1 on the task; least squares
// takes l2 only when it is written (its default is logistic regression's).
TEST(Ridge, LeastSquaresIsRidgeOnlyWhenL2IsSet) {
  const std::string path = ::testing::TempDir() + "fedrt_ridge_experiment_" + std::to_string(::getpid()) + ".toml";
  auto task_of = [&](const std::string& extra) {
    std::ofstream(path) << "[problem]\nkind = \"lsq\"\nagents = 3\ndim = 4\n" << extra;
    config::ExperimentConfig cfg;
    const Status st = config::LoadExperimentToml(path, cfg);
    EXPECT_TRUE(st.ok()) << st.message();
    return config::MakeTask(cfg);
  };
  auto plain = task_of("");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->problem.synthetic.l2, 0.0);
  auto ridge = task_of("l2 = 0.25\n");
  ASSERT_TRUE(ridge.ok()) << ridge.status().message();
  EXPECT_EQ(ridge->problem.synthetic.l2, 0.25);
  EXPECT_FALSE(ridge->problem.intercept);
}

// Large d (docs/algorithms.md, "Large d"): the matrix-free oracle is the same
// function as the dense one (full gradients within round-off, mini-batches
// bit for bit), and conjugate gradients reach the dense x_star, or, without
// l2 and with fewer samples than d, the minimum-norm solution.
TEST(LargeD, MatrixFreeLeastSquaresEqualsTheDenseOracle) {
  const Rows r = MakeRows(false);
  std::vector<unsigned char> mem(1 << 14);
  Arena arena(mem.data(), mem.size());
  for (bool intercept : {false, true}) {
    const double* rows = intercept ? r.a.data() : r.z.data();
    auto dense = LeastSquaresOracle<double>::create(arena, kFeatures + 1, kN, rows, r.y.data(), 0.0, 0.05, intercept);
    auto free = LeastSquaresOracle<double>::CreateMatrixFree(kFeatures + 1, kN, rows, r.y.data(), 0.05, intercept);
    ASSERT_TRUE(dense.ok() && free.ok());
    EXPECT_TRUE(free->matrix_free());
    EXPECT_FALSE(dense->matrix_free());
    ExpectSameOracle(*free, *dense);
  }
}

problems::FedDataset Wide(int agents, int n, int d) {
  problems::FedDataset data;
  data.loss = problems::FedLoss::kLeastSquares;
  data.dim = d;
  for (int c = 0; c < agents; ++c) {
    CounterRng rng(5, 0, static_cast<uint64_t>(c), 0, RngStream::kProblem);
    problems::MatrixRM x(n, d);
    Eigen::VectorXd y(n);
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < d; ++k) x(j, k) = rng.uniform() - 0.5 + (k == c ? 0.3 : 0.0);
      y[j] = rng.uniform() - 0.5;
    }
    data.x.push_back(std::move(x));
    data.y.push_back(std::move(y));
  }
  return data;
}

TEST(LargeD, ConjugateGradientsReachTheDenseSolution) {
  const problems::FedDataset data = Wide(3, 40, 12);
  for (double l2 : {0.0, 0.2}) {
    auto dense = problems::ExactSolution(data, l2);
    int iters = 0;
    auto cg = problems::LeastSquaresSolutionCg(data, l2, &iters);
    ASSERT_TRUE(dense.ok() && cg.ok());
    EXPECT_LT((*cg - *dense).norm(), 1e-10 * dense->norm()) << "l2 " << l2;
    EXPECT_LE(iters, 12 + 50);
  }
}

TEST(LargeD, WithoutL2AndFewerSamplesThanDConjugateGradientsGiveTheMinimumNormSolution) {
  const problems::FedDataset data = Wide(2, 5, 20);  // 10 samples in R^20: singular normal equations
  EXPECT_FALSE(problems::LeastSquaresSystem(data).ok());
  auto cg = problems::LeastSquaresSolutionCg(data, 0.0);
  ASSERT_TRUE(cg.ok()) << cg.status().message();
  // The weighted stacked system W^(1/2) X x = W^(1/2) y, w_c = 1 / (N n_c): its
  // minimum-norm least-squares solution by complete orthogonal decomposition.
  Eigen::MatrixXd a(10, 20);
  Eigen::VectorXd b(10);
  for (int c = 0; c < 2; ++c) {
    a.middleRows(5 * c, 5) = data.x[c] * std::sqrt(0.1);
    b.segment(5 * c, 5) = data.y[c] * std::sqrt(0.1);
  }
  const Eigen::VectorXd want = a.completeOrthogonalDecomposition().solve(b);
  EXPECT_LT((*cg - want).norm(), 1e-9 * want.norm());
}

}  // namespace
}  // namespace fedrt
