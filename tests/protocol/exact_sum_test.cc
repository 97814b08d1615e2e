// core/exact_sum.h: the sum is exact and rounded once, so it does not depend
// on the order of the addends (docs/architecture.md, "Same iterates in every driver").
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/core/exact_sum.h"

namespace fedrt {
namespace {

double Sum(const std::vector<double>& v) {
  ExactSum s;
  s.clear();
  for (double x : v) s.add(x);
  return s.value();
}

TEST(ExactSum, RoundsOnceToNearestEven) {
  const double ulp1 = std::ldexp(1.0, -52);
  EXPECT_EQ(Sum({1.0, std::ldexp(1.0, -53)}), 1.0);                       // tie: to even (down)
  EXPECT_EQ(Sum({1.0 + ulp1, std::ldexp(1.0, -53)}), 1.0 + 2 * ulp1);     // tie: to even (up)
  EXPECT_EQ(Sum({1.0, std::ldexp(1.0, -53), std::ldexp(1.0, -300)}), 1.0 + ulp1);  // just above the tie
  // Naive left-to-right summation loses the small terms; the exact sum keeps them.
  std::vector<double> v = {1.0};
  for (int i = 0; i < 16; ++i) v.push_back(std::ldexp(1.0, -56));
  EXPECT_EQ(Sum(v), 1.0 + std::ldexp(1.0, -52));
  double naive = 0;
  for (double x : v) naive += x;
  EXPECT_EQ(naive, 1.0);
}

TEST(ExactSum, CancellationSignsSubnormalsAndOverflow) {
  EXPECT_EQ(Sum({1e300, 1.0, -1e300}), 1.0);
  EXPECT_EQ(Sum({-3.5, 1.25}), -2.25);
  EXPECT_EQ(Sum({0.0, -0.0}), 0.0);
  EXPECT_EQ(Sum({5e-324, 5e-324}), 1e-323);
  EXPECT_EQ(Sum({-5e-324, 2.5e-323}), 2e-323);
  EXPECT_TRUE(std::isinf(Sum({1.7e308, 1.7e308})));
  EXPECT_EQ(Sum({1.7e308, 1.7e308, -1.7e308}), 1.7e308);  // no intermediate overflow
  EXPECT_EQ(Sum({0.1, 0.2}), 0.1 + 0.2);                  // one rounding, as the hardware's single add
}

// Random addends over 200 binary orders of magnitude, each set summed in 20
// shuffled orders: every order gives the same bits.
TEST(ExactSum, ResultDoesNotDependOnOrder) {
  std::mt19937_64 g(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(g() % 64);
    std::vector<double> v;
    for (int i = 0; i < n; ++i) {
      double x = std::ldexp(static_cast<double>(g() >> 11), static_cast<int>(g() % 200) - 150);
      v.push_back(g() & 1 ? -x : x);
    }
    const double first = Sum(v);
    for (int k = 0; k < 20; ++k) {
      std::shuffle(v.begin(), v.end(), g);
      ASSERT_EQ(Sum(v), first) << "trial " << trial;
    }
  }
}

// 3 million additions cross the carry interval (2^20 additions) twice; the
// result is the correctly rounded n x.
TEST(ExactSum, ManyAdditionsCarryCorrectly) {
  ExactSum s;
  s.clear();
  const double x = 0.75 + std::ldexp(1.0, -40);
  const long n = 3000000;
  for (long i = 0; i < n; ++i) s.add(x);
  EXPECT_EQ(s.value(), x * static_cast<double>(n));  // one correctly rounded product
}

// Against a wider float: with exponents within 2^-20..2^20 and 2000 addends
// the sum needs at most 53 + 40 + 11 bits, which binary128 (113 bits) holds
// exactly, so rounding its sum once to double is the exact answer. Mixed
// signs, cancellations and carries across the tracked chunks included.
TEST(ExactSum, EqualsTheRoundedExactSumOfABinary128) {
#if defined(__SIZEOF_FLOAT128__)
  using Wide = __float128;
#elif defined(__LDBL_MANT_DIG__) && __LDBL_MANT_DIG__ >= 113
  using Wide = long double;
#else
  GTEST_SKIP() << "no 113-bit floating type on this target";
#endif
#if defined(__SIZEOF_FLOAT128__) || (defined(__LDBL_MANT_DIG__) && __LDBL_MANT_DIG__ >= 113)
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> expo(-20, 20), sign(0, 1);
  ExactSum s;
  for (int trial = 0; trial < 200; ++trial) {
    s.clear();
    Wide wide = 0;
    const int n = 1 + trial * 10;
    for (int i = 0; i < n; ++i) {
      const double x = (sign(gen) ? -1.0 : 1.0) * std::ldexp(mant(gen), expo(gen));
      s.add(x);
      wide += static_cast<Wide>(x);
    }
    EXPECT_EQ(s.value(), static_cast<double>(wide)) << "trial " << trial;
  }
#endif
}

}  // namespace
}  // namespace fedrt
