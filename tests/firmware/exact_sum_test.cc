// ExactSumArray on the microcontroller (32-bit size_t, software doubles):
// every coordinate reads ExactSum's bits for the same addends, and with its
// one-slot pool (d = 8) a second promotion is lost and said so, until clear().

#include <math.h>
#include <string.h>

#include "fedrt/core/arena.h"
#include "fedrt/core/exact_sum.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/rng.h"
#include "fw_check.h"

namespace {

constexpr int kDim = 8;
fedrt::StaticArena<fedrt::ExactSumArray::ArenaBytes(kDim)> arena;
fedrt::ExactSum ref[kDim];

uint64_t Bits(double x) {
  uint64_t b;
  memcpy(&b, &x, 8);
  return b;
}

// An addend of coordinate i: coordinate 0 spans the whole double range (it
// is promoted to the pool's slot), the others one of a few narrower mixes.
double Draw(fedrt::CounterRng& rng, int i) {
  const double m = 1.0 + rng.uniform();
  const double sign = rng.bernoulli(0.5) ? -1.0 : 1.0;
  switch (i % 4) {
    case 0: return sign * (i == 0 ? ldexp(m, static_cast<int>(rng.below(2098)) - 1074) : 0.0);  // else +-0
    case 1: return sign * ldexp(m, static_cast<int>(rng.below(21)) - 10);
    case 2: return sign * ldexp(m, static_cast<int>(rng.below(141)) - 1070);  // subnormals to 2^-929
    default: return sign * ldexp(m, 1023 - static_cast<int>(rng.below(100)));  // overflowing sums
  }
}

}  // namespace

int main() {
  auto created = fedrt::ExactSumArray::create(arena, kDim);
  FW_CHECK(created.ok());
  fedrt::ExactSumArray& a = *created;
  FW_CHECK(fedrt::ExactSumArray::PoolSlots(kDim) == 1);
  fedrt::CounterRng rng(20240611);
  bool all_equal = true;
  for (int trial = 0; trial < 200; ++trial) {
    a.clear();
    for (auto& r : ref) r.clear();
    const int n = 1 + static_cast<int>(rng.below(24));
    for (int k = 0; k < n; ++k) {
      for (int i = 0; i < kDim; ++i) {
        const double x = Draw(rng, i);
        a.add(i, x);
        ref[i].add(x);
        if (rng.bernoulli(0.2)) {  // and cancel it again now and then
          a.add(i, -x);
          ref[i].add(-x);
        }
      }
    }
    for (int i = 0; i < kDim; ++i) all_equal = all_equal && Bits(a.value(i)) == Bits(ref[i].value());
  }
  FW_CHECK(all_equal);
  FW_CHECK(a.status().ok());

  // Three coordinates need a slot; the pool has one.
  a.clear();
  for (int i = 0; i < 3; ++i) {
    a.add(i, 1e30);
    a.add(i, 1e-30);
  }
  FW_CHECK(a.promoted() == 1 && a.lost() == 2);
  FW_CHECK(a.value(0) == 1e30);
  FW_CHECK(isnan(a.value(1)) && isnan(a.value(2)));
  FW_CHECK(a.status().code() == fedrt::StatusCode::kResourceExhausted);
  a.clear();
  FW_CHECK(a.status().ok() && a.lost() == 0 && Bits(a.value(1)) == Bits(0.0));
  return fw_result("exact_sum_test");
}
