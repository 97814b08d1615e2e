// The logistic oracle's stochastic gradient takes samples in blocks of
// kBlock on the host (independent dot products the CPU overlaps), or all at
// once in the AVX2 kernel (draws 4 at a time, passes of 128 samples, a last
// partial block of 8); every sum keeps the one-by-one order, so the bits are
// those of the plain loop below, which is how the gradient was computed
// before (and still is on devices).

#include <cmath>
#include <limits>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/problems/logistic.h"
#if defined(FEDRT_LOGISTIC_AVX2)
#include "fedrt/problems/logistic_avx2.h"
#endif

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
      for (uint32_t batch : {0u, 1u, 3u, 7u, 8u, 13u, 100u, 128u, 131u, 203u, 260u}) {
        const int p = intercept ? d - 1 : d;
        const uint32_t n = batch == 0 && d == 9 ? 301 : 37;  // full gradients over several passes of 128 too
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

TEST(LogisticBlocks, AdvanceSkipsTheDraws) {
  CounterRng a(77), b(77);
  a.next_u64();
  b.next_u64();
  const uint64_t state = a.advance(5);
  for (uint64_t i = 1; i <= 5; ++i) EXPECT_EQ(Mix64(state + i * CounterRng::kGolden), b.next_u64());
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

#if defined(FEDRT_LOGISTIC_AVX2)
// The kernel's exp (glibc's, possibly without the errno wrapper) is std::exp bit for bit.
TEST(LogisticBlocks, KernelExpIsLibmExp) {
  CounterRng r(3);
  auto same = [](double v) {
    const double a = problems::detail::LogisticExp(v), b = std::exp(v);
    return std::memcmp(&a, &b, sizeof a) == 0;
  };
  for (int i = 0; i < 200000; ++i) {
    const double v = (r.uniform() - 0.5) * 1500.0;  // overflow, underflow and subnormal results too
    ASSERT_TRUE(same(v)) << v;
    ASSERT_TRUE(same(-r.uniform() * 40.0)) << i;
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, 1e-300, -1e-300, 709.78, 709.79, -745.1, -745.2, inf, -inf}) EXPECT_TRUE(same(v)) << v;
  EXPECT_TRUE(std::isnan(problems::detail::LogisticExp(std::nan(""))));
}
#endif

}  // namespace
}  // namespace fedrt
