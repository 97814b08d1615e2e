// The logistic oracle's stochastic gradient takes samples in blocks of
// kBlock on the host (independent dot products the CPU overlaps); every sum
// keeps the one-by-one order, so the bits are those of the plain loop below,
// which is how the gradient was computed before (and still is on devices).

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/problems/logistic.h"

namespace fedrt {
namespace {

// g = (1/B) sum_b -y_j sigma(-y_j z_j^T x) z_j + lambda x, one sample at a time.
void Reference(const std::vector<double>& xs, const std::vector<double>& ys, int d, int p, uint32_t n, double l2,
               const double* x, double* g, uint32_t batch, CounterRng& rng) {
  for (int k = 0; k < d; ++k) g[k] = l2 * x[k];
  const uint32_t m = batch == 0 ? n : batch;
  const double inv_m = 1.0 / static_cast<double>(m);
  for (uint32_t b = 0; b < m; ++b) {
    const uint32_t j = batch == 0 ? b : rng.below(n);
    const double* a = xs.data() + static_cast<size_t>(j) * p;
    double z = 0.0;
    for (int k = 0; k < p; ++k) z += a[k] * x[k];
    if (p < d) z += x[p];
    const double coef = -ys[j] * problems::Sigmoid(-ys[j] * z) * inv_m;
    for (int k = 0; k < p; ++k) g[k] += coef * a[k];
    if (p < d) g[p] += coef;
  }
}

TEST(LogisticBlocks, GradientBitsEqualTheOneByOneLoop) {
  for (int d : {9, 6, 3, 13}) {  // every path of the host kernels: 8 and 4 coordinates at a time, and the rest
    for (bool intercept : {false, true}) {
      for (uint32_t batch : {0u, 1u, 7u, 8u, 100u, 203u}) {
        const int p = intercept ? d - 1 : d;
        const uint32_t n = 37;
        CounterRng data(11);
        std::vector<double> xs(static_cast<size_t>(n) * p), ys(n), x(d);
        for (double& v : xs) v = 4.0 * data.uniform() - 2.0;
        for (double& v : ys) v = data.uniform() < 0.5 ? -1.0 : 1.0;
        for (double& v : x) v = data.uniform() - 0.5;
        uint8_t buf[64];
        Arena arena(buf, sizeof(buf));
        auto o = problems::LogisticOracle<double>::create(arena, d, n, xs.data(), ys.data(), 0.1, intercept);
        ASSERT_TRUE(o.ok());
        std::vector<double> g(d), want(d);
        CounterRng r1(0x5eed), r2(0x5eed);
        for (int step = 0; step < 3; ++step) {
          o->gradient(x.data(), g.data(), batch, r1);
          Reference(xs, ys, d, p, n, 0.1, x.data(), want.data(), batch, r2);
          EXPECT_EQ(0, std::memcmp(g.data(), want.data(), sizeof(double) * d))
              << "d " << d << " batch " << batch << " intercept " << intercept << " step " << step;
          EXPECT_EQ(r1.next_u64(), r2.next_u64());  // the same draws were taken
        }
      }
    }
  }
}

}  // namespace
}  // namespace fedrt
