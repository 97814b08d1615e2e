#pragma once
// An exact sum handed on as doubles (docs/gateways.md, "Partial aggregation"):
// sum_i of an ExactSumArray is split into pieces r_1, r_2, ... whose exact sum
// it is: r_1 = the sum rounded to nearest, r_2 = what remains rounded, and so
// on until nothing remains. Each piece is a double, so a receiver that adds
// them to its own exact sums holds exactly what it would hold had it added
// the original addends itself, in any order. A sum of the common case (190
// bits at most) takes at most 4 pieces; a promoted coordinate more.

#include <cmath>
#include <cstddef>

#include "fedrt/core/exact_sum_array.h"

namespace fedrt {

// The most pieces a sum can need: ExactSum spans 2^-1074 .. 2^1024 plus the
// headroom of its limbs, about 2200 bits, 53 (at least 52) per piece.
constexpr int kMaxSumPieces = 48;

// Moves sum i of `a` into out[0..k): returns k (0 for a zero sum), the sum of
// the pieces being exactly the sum; sum i is zero afterwards. Returns -1 when
// the sum is beyond the double range (its rounding is infinite: the sum is
// left as it was) or lost (NaN; device builds, whose slot pool can fill up
// on the way: the sum is then lost too).
inline int TakeSumPieces(ExactSumArray& a, size_t i, double* out) {
  const double first = a.value(i);
  if (!std::isfinite(first)) return -1;
  int k = 0;
  for (double r = first; r != 0.0; r = a.value(i)) {
    if (std::isnan(r) || k == kMaxSumPieces) return -1;
    out[k++] = r;
    a.add(i, -r);  // exact: what remains is below half an ulp of r
  }
  return k;
}

}  // namespace fedrt
