#pragma once
// Properties shared by the shard loaders' fuzz targets (csv_shard_fuzz.cc,
// record_shard_fuzz.cc; docs/fuzzing.md): what every accepted shard must be,
// and bit-for-bit equality of two round-tripped value arrays.
#include <cmath>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "fedrt/data/shard.h"

namespace fedrt::fuzz {

inline bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// count x dim finite features; labels (if the model has them) of the model's kind.
inline void RequireValidShard(const data::Shard& s, data::LabelKind kind, uint32_t classes) {
  Require(s.x.size() == s.count() * s.dim, "shard size is not count x dim");
  for (double v : s.x) Require(std::isfinite(v), "a non-finite feature was accepted");
  for (double v : s.y) {
    double stored = 0;
    Require(kind == data::LabelKind::kNone || (data::StoredLabel(kind, classes, v, stored) && stored == v),
            "an accepted label is not of the model's kind");
  }
}

}  // namespace fedrt::fuzz
