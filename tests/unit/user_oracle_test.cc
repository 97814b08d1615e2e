// The oracle of a user-defined model (problems/user_oracle.h): mini-batches
// are the rows the step's generator draws (with replacement, as the built-in
// oracles draw them), the full batch is the shard in place, f_c is the user's
// loss over all examples, and local SGD over it moves as the gradient says.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fedrt/algorithms/fedopt.h"
#include "fedrt/problems/user_oracle.h"

namespace fedrt::problems {
namespace {

// L(w) = mean_j 0.5 (w . x_j - y_j)^2; records what it was called with.
struct Recorder {
  std::vector<std::vector<double>> rows;
  std::vector<const double*> data;
  static double Fn(void* self, const double* w, uint32_t dim, const fedrt_batch* b, double* g) {
    auto* r = static_cast<Recorder*>(self);
    r->data.push_back(b->x);
    std::vector<double> seen;
    double loss = 0;
    for (uint32_t k = 0; k < dim; ++k) g[k] = 0;
    for (uint32_t j = 0; j < b->count; ++j) {
      const double* x = b->x + j * b->features;
      double e = -b->y[j];
      for (uint32_t k = 0; k < dim; ++k) e += w[k] * x[k];
      loss += 0.5 * e * e;
      for (uint32_t k = 0; k < dim; ++k) g[k] += e * x[k] / b->count;
      seen.push_back(b->y[j]);
    }
    r->rows.push_back(seen);
    return loss / b->count;
  }
};

TEST(UserOracle, BatchesAreTheRowsTheGeneratorDrawsAndTheFullBatchIsInPlace) {
  const uint32_t n = 7, f = 2;
  std::vector<double> x(n * f), y(n);
  for (uint32_t j = 0; j < n; ++j) {
    x[j * f] = 1.0 + j;
    x[j * f + 1] = -0.5 * j;
    y[j] = 100.0 + j;  // the label names the row
  }
  std::vector<uint8_t> mem(UserModelOracle<double>::ArenaBytes(2, f, 3));
  Arena arena(mem.data(), mem.size());
  Recorder rec;
  auto o = UserModelOracle<double>::create(arena, 2, f, n, x.data(), y.data(), 3, &Recorder::Fn, &rec);
  ASSERT_TRUE(o.ok()) << o.status().message();
  const double w[2] = {0.25, -1.0};
  double g[2];
  CounterRng rng(42), mirror(42);
  o->gradient(w, g, 3, rng);
  ASSERT_EQ(rec.rows.size(), 1u);
  ASSERT_EQ(rec.rows[0].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rec.rows[0][i], 100.0 + mirror.below(n)) << i;
  o->gradient(w, g, 0, rng);  // full gradient: every row, the caller's memory
  EXPECT_EQ(rec.data.back(), x.data());
  EXPECT_EQ(rec.rows.back().size(), n);
  double expect = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const double e = w[0] * x[j * f] + w[1] * x[j * f + 1] - y[j];
    expect += 0.5 * e * e / n;
  }
  EXPECT_NEAR(o->loss(w), expect, 1e-12 * expect);
  EXPECT_FALSE(UserModelOracle<double>::create(arena, 2, f, n, x.data(), y.data(), 3, nullptr, nullptr).ok());
}

TEST(UserOracle, FedAvgLocalStepsLowerTheUsersLoss) {
  const uint32_t n = 20, f = 2;
  std::vector<double> x(n * f), y(n);
  for (uint32_t j = 0; j < n; ++j) {
    x[j * f] = std::sin(1.0 + j);
    x[j * f + 1] = std::cos(0.3 * j);
    y[j] = 2.0 * x[j * f] - x[j * f + 1];
  }
  std::vector<uint8_t> mem(UserModelOracle<double>::ArenaBytes(2, f, 4) + algorithms::FedOptClient<double>::ArenaBytes(2));
  Arena arena(mem.data(), mem.size());
  Recorder rec;
  auto o = UserModelOracle<double>::create(arena, 2, f, n, x.data(), y.data(), 4, &Recorder::Fn, &rec);
  ASSERT_TRUE(o.ok());
  algorithms::FedOptHyper<double> hy;
  hy.step_size = 0.3;
  hy.local_steps = 50;
  hy.batch = 4;
  auto c = algorithms::FedOptClient<double>::create(arena, 2, hy);
  ASSERT_TRUE(c.ok());
  const double x0[2] = {0, 0};
  algorithms::RoundPlan plan;
  plan.local_steps = 50;
  c->begin_round(x0, plan);
  CounterRng rng(7);
  c->run_local_steps(*o, rng);
  EXPECT_EQ(rec.rows.size(), 50u);
  EXPECT_LT(o->loss(c->local_iterate()), 0.1 * o->loss(x0));
}

}  // namespace
}  // namespace fedrt::problems
