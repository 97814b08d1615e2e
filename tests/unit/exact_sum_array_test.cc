// core/exact_sum_array.h: every coordinate reads the bits ExactSum reads for
// the same addends, in any order, whatever the addends (rebased, promoted to a
// slot, spilled to the heap). Built twice (tests/CMakeLists.txt): as host code
// (FEDRT_HOST: slots beyond the arena's pool come from the heap) and as device
// code (no heap: a coordinate that finds the pool full is lost, reads NaN, and
// status() says so).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/algorithms/fedem.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/algorithms/fedopt.h"
#include "fedrt/algorithms/lsa.h"
#include "fedrt/core/exact_sum.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/exact_sum_pieces.h"

namespace fedrt {
namespace {

#if defined(FEDRT_HOST)
constexpr bool kHeapSlots = true;
#else
constexpr bool kHeapSlots = false;
#endif

uint64_t Bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  return b;
}
double FromBits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, 8);
  return x;
}

double Reference(const std::vector<double>& v) {
  ExactSum s;
  s.clear();
  for (double x : v) s.add(x);
  return s.value();
}

// An ExactSumArray with its own arena memory.
struct Sums {
  explicit Sums(size_t n) : mem(ExactSumArray::ArenaBytes(n)) {
    Arena arena(mem.data(), mem.size());
    auto r = ExactSumArray::create(arena, n);
    EXPECT_TRUE(r.ok());
    a = *r;
  }
  std::vector<uint8_t> mem;
  ExactSumArray a;
};

double One(const std::vector<double>& v) {
  Sums s(1);
  for (double x : v) s.a.add(0, x);
  return s.a.value(0);
}

// Addends of one coordinate, drawn by one of several generators.
std::vector<double> Draw(std::mt19937_64& g, int kind) {
  const int n = 1 + static_cast<int>(g() % 24);
  std::vector<double> v;
  const double mid = std::ldexp(1.0, static_cast<int>(g() % 200) - 100);
  auto mant = [&] { return 1.0 + static_cast<double>(g() >> 12) * std::ldexp(1.0, -52); };
  auto sign = [&](double x) { return g() & 1 ? -x : x; };
  for (int i = 0; i < n; ++i) {
    double x = 0;
    switch (kind) {
      case 0: x = sign(mid * std::ldexp(mant(), static_cast<int>(g() % 21) - 10)); break;   // one scale
      case 1: x = sign(mid * std::ldexp(mant(), static_cast<int>(g() % 141) - 70)); break;  // rebases
      case 2: x = sign(std::ldexp(mant(), static_cast<int>(g() % 2098) - 1074)); break;    // promotions
      case 3: x = sign(FromBits(g() & ((uint64_t{1} << 52) - 1))); break;                  // subnormals
      case 4: x = sign(std::ldexp(mant(), 1023 - static_cast<int>(g() % 3))); break;       // overflow
      case 5: x = sign(FromBits(g() >> 1)); if (!std::isfinite(x)) x = 0; break;           // any bits
      default: x = g() % 4 == 0 ? sign(0.0) : sign(static_cast<double>(g() % 7)); break;   // small integers, +-0
    }
    v.push_back(x);
  }
  if (g() % 3 == 0) {  // cancellations: each addend's negation, and maybe a residue
    const size_t m = v.size();
    for (size_t i = 0; i < m; ++i) v.push_back(-v[i]);
    if (g() & 1) v.push_back(sign(std::ldexp(mant(), static_cast<int>(g() % 2098) - 1074)));
  }
  return v;
}

// 64 coordinates at a time, each from a random generator, their addends
// interleaved in random order; 5 shuffles of each set; reads after clear().
TEST(ExactSumArray, EqualsExactSumBitForBitInAnyOrder) {
  std::mt19937_64 g(20240611);
  const size_t n = 64;
  Sums s(n);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::vector<double>> v(n);
    std::vector<uint64_t> want(n);
    for (size_t i = 0; i < n; ++i) {
      v[i] = Draw(g, static_cast<int>(g() % 7));
      want[i] = Bits(Reference(v[i]));
    }
    for (int order = 0; order < 5; ++order) {
      std::vector<std::pair<size_t, double>> seq;
      for (size_t i = 0; i < n; ++i) {
        std::shuffle(v[i].begin(), v[i].end(), g);
        for (double x : v[i]) seq.push_back({i, x});
      }
      std::shuffle(seq.begin(), seq.end(), g);
      s.a.clear();
      for (const auto& [i, x] : seq) s.a.add(i, x);
      for (size_t i = 0; i < n; ++i) {
        const double got = s.a.value(i);
        if (!kHeapSlots && std::isnan(got)) {  // lost to the device pool (1 slot here): said so
          ASSERT_EQ(s.a.status().code(), StatusCode::kResourceExhausted);
          continue;
        }
        ASSERT_EQ(Bits(got), want[i]) << "trial " << trial << " order " << order << " coordinate " << i;
      }
      if (kHeapSlots) {
        ASSERT_TRUE(s.a.status().ok());
        ASSERT_EQ(s.a.lost(), 0u);
      }
    }
  }
}

// Read after every addition (FedEM reads V_0 after each agent's): each
// intermediate value equals ExactSum's of the addends so far.
TEST(ExactSumArray, EveryIntermediateValueMatches) {
  std::mt19937_64 g(99);
  Sums s(1);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::vector<double> v = Draw(g, trial % 7);
    ExactSum ref;
    ref.clear();
    s.a.clear();
    for (size_t k = 0; k < v.size(); ++k) {
      ref.add(v[k]);
      s.a.add(0, v[k]);
      ASSERT_EQ(Bits(s.a.value(0)), Bits(ref.value())) << "trial " << trial << " after " << k + 1;
    }
  }
}

TEST(ExactSumArray, SignsOfZeroRoundingAndOverflowAsExactSum) {
  const double tiny = std::ldexp(1.0, -1074), ulp1 = std::ldexp(1.0, -52);
  const std::vector<std::vector<double>> cases = {
      {},
      {-0.0},
      {0.0, -0.0},
      {1.0, -1.0},
      {-1.0, 1.0, -0.0},
      {-tiny},
      {tiny, -tiny, -tiny},
      {1e300, 1.0, -1e300},
      {1.0, std::ldexp(1.0, -53)},
      {1.0 + ulp1, std::ldexp(1.0, -53)},
      {1.0, std::ldexp(1.0, -53), std::ldexp(1.0, -1000)},
      {-1.0, -std::ldexp(1.0, -53), -tiny},
      {DBL_MAX, DBL_MAX},
      {-DBL_MAX, -DBL_MAX},
      {DBL_MAX, DBL_MAX, -DBL_MAX},
      {DBL_MAX, std::ldexp(1.0, 970)},        // a tie, to even: 2^1024, inf
      {DBL_MAX, std::ldexp(1.0, 970), tiny},  // above the tie: inf
      {DBL_MAX, std::ldexp(1.0, 969)},        // below the tie: DBL_MAX
      {DBL_MAX, DBL_MAX, DBL_MAX, tiny, -DBL_MAX, -DBL_MAX, -DBL_MAX},  // promoted past 2^1024 and back
      {0.1, 0.2},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    auto v = cases[c];
    const uint64_t want = Bits(Reference(v));
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(Bits(One(v)), want) << "case " << c;
      std::next_permutation(v.begin(), v.end());
    }
  }
  // A tie broken (or not) by one bit k places further down, whether it sits in
  // the rounding window, just below it, after a rebase or in a slot.
  for (int k = 54; k < 400; ++k) {
    for (double sign : {1.0, -1.0}) {
      for (double top : {1.0, 1.0 + ulp1, 1.5 * std::ldexp(1.0, 1000), std::ldexp(1.0, -1000)}) {
        const double half = std::ldexp(top, -53);
        for (double low : {std::ldexp(top, -k), -std::ldexp(top, -k), 0.0}) {
          const std::vector<double> v = {sign * top, sign * half, sign * low};
          EXPECT_EQ(Bits(One(v)), Bits(Reference(v))) << "k " << k << " top " << top;
        }
      }
    }
  }
  EXPECT_EQ(Bits(One({})), Bits(0.0));
  EXPECT_EQ(Bits(One({-0.0})), Bits(0.0));
  EXPECT_EQ(Bits(One({-1.0, 1.0})), Bits(0.0));
  EXPECT_EQ(One({DBL_MAX, DBL_MAX}), HUGE_VAL);
  EXPECT_EQ(One({-DBL_MAX, -DBL_MAX}), -HUGE_VAL);
}

// The bits of the sum grow past the fast path's headroom many times over.
TEST(ExactSumArray, ManyAdditionsStayExact) {
  Sums s(2);
  ExactSum ref;
  ref.clear();
  const double x = 0.75 + std::ldexp(1.0, -40);
  const long n = 3000000;
  for (long i = 0; i < n; ++i) {
    const double y = i % 2 ? -x : std::ldexp(x, -60);
    s.a.add(0, x);
    s.a.add(1, y);
    ref.add(y);
  }
  EXPECT_EQ(s.a.value(0), x * static_cast<double>(n));  // one correctly rounded product
  EXPECT_EQ(Bits(s.a.value(1)), Bits(ref.value()));
  EXPECT_EQ(s.a.promoted(), 0u);
}

// 1e30 + 1e-30 spans ~200 bits: promoted. With 8 coordinates the arena holds
// one slot; host builds take the others from the heap, device builds lose
// them (NaN, RESOURCE_EXHAUSTED) until clear().
TEST(ExactSumArray, PromotionBeyondThePool) {
  Sums s(8);
  ASSERT_EQ(ExactSumArray::PoolSlots(8), 1u);
  for (int round = 0; round < 2; ++round) {
    s.a.clear();
    for (size_t i = 0; i < 4; ++i) {
      s.a.add(i, 1e30);
      s.a.add(i, 2.5);
      s.a.add(i, 1e-30 * static_cast<double>(i + 1));
      s.a.add(i, -1e30);
    }
    s.a.add(7, 1.5);
    EXPECT_EQ(s.a.value(7), 1.5);
    EXPECT_EQ(Bits(s.a.value(5)), Bits(0.0));
    EXPECT_EQ(s.a.value(0), Reference({2.5, 1e-30}));
    if (kHeapSlots) {
      EXPECT_TRUE(s.a.status().ok());
      EXPECT_EQ(s.a.promoted(), 4u);
      for (size_t i = 0; i < 4; ++i)
        EXPECT_EQ(Bits(s.a.value(i)), Bits(Reference({1e30, 2.5, 1e-30 * static_cast<double>(i + 1), -1e30})));
    } else {
      EXPECT_EQ(s.a.status().code(), StatusCode::kResourceExhausted);
      EXPECT_EQ(s.a.promoted(), 1u);
      EXPECT_EQ(s.a.lost(), 3u);
      for (size_t i = 1; i < 4; ++i) EXPECT_TRUE(std::isnan(s.a.value(i)));
    }
  }
  s.a.clear();
  EXPECT_TRUE(s.a.status().ok());
  EXPECT_EQ(s.a.lost(), 0u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(Bits(s.a.value(i)), Bits(0.0));
  s.a.add(1, -2.0);
  EXPECT_EQ(s.a.value(1), -2.0);
}

// A partial sum handed on as pieces (core/exact_sum_pieces.h): the addends
// split between two arrays (a gateway's and the coordinator's), the first
// moved into the second as pieces, read the bits of one sum of them all; the
// first ends at zero; addends within 80 binary orders take at most 4 pieces; one
// beyond the double range is refused and left as it was.
TEST(ExactSumPieces, PiecesCarryAPartialSumExactly) {
  std::mt19937_64 g(20261129);
  const size_t n = 64;
  Sums gateway(n), coordinator(n);
  double piece[kMaxSumPieces];
  for (int trial = 0; trial < 200; ++trial) {
    gateway.a.clear();
    coordinator.a.clear();
    std::vector<uint64_t> want(n);
    std::vector<int> span(n);  // binary orders between the addends' largest and smallest exponents
    for (size_t i = 0; i < n; ++i) {
      int kind = static_cast<int>(g() % 7);
      if (kind == 4) kind = 0;  // overflow: below
      const std::vector<double> v = Draw(g, kind);
      want[i] = Bits(Reference(v));
      int lo = 1 << 20, hi = -(1 << 20);
      for (double x : v)
        if (x != 0) lo = std::min(lo, std::ilogb(x)), hi = std::max(hi, std::ilogb(x));
      span[i] = hi - lo;
      for (double x : v) (g() & 1 ? gateway : coordinator).a.add(i, x);
    }
    for (size_t i = 0; i < n; ++i) {
      const int k = TakeSumPieces(gateway.a, i, piece);
      if (!kHeapSlots && k < 0) continue;  // lost to the device pool: refused
      ASSERT_GE(k, 0) << "trial " << trial << " coordinate " << i;
      // At most 48 addends within 80 binary orders: a sum of at most 80 + 53 + 6 bits, 3 or 4 pieces.
      if (span[i] <= 80) {
        EXPECT_LE(k, 4) << "trial " << trial << " coordinate " << i;
      }
      for (int j = 0; j < k; ++j) coordinator.a.add(i, piece[j]);
      ASSERT_EQ(Bits(gateway.a.value(i)), Bits(0.0));
      const double got = coordinator.a.value(i);
      if (!kHeapSlots && std::isnan(got)) continue;
      ASSERT_EQ(Bits(got), want[i]) << "trial " << trial << " coordinate " << i;
    }
  }
  Sums big(1);
  big.a.add(0, DBL_MAX);
  big.a.add(0, DBL_MAX);
  EXPECT_EQ(TakeSumPieces(big.a, 0, piece), -1);
  big.a.add(0, -DBL_MAX);
  EXPECT_EQ(big.a.value(0), DBL_MAX);  // left as it was
}

// 26 bytes per coordinate plus 1 + n/128 ExactSum slots (544 bytes each):
// ArenaBytes(10^6) / 10^6 = 30.25, against ExactSum's 544.
TEST(ExactSumArray, BytesPerCoordinate) {
  EXPECT_EQ(sizeof(ExactSum), 544u);
  const size_t d = 1000000;
  const double per = static_cast<double>(ExactSumArray::ArenaBytes(d)) / d;
  EXPECT_LE(per, 30.5);
  // The coordinator's servers: their own vectors and these sums.
  EXPECT_LE(static_cast<double>(algorithms::LsaServer<double>::ArenaBytes(d)) / d, 8 + 30.5);
  EXPECT_LE(static_cast<double>(algorithms::FedOptServer<double>::ArenaBytes(d)) / d, 2 * (8 + 30.5));
  EXPECT_LE(static_cast<double>(algorithms::FedEmServer<double, problems::GmmMStepOf<double>>::ArenaBytes(d)) / d, 4 * 8 + 2 * 30.5);
}

}  // namespace
}  // namespace fedrt
