#pragma once
// Data sources: where an agent's examples come from, on a device or in the
// simulator (docs/data.md). A source is pulled one example at a time:
// count(), next(x, y), and restart(seed) for the next pass, in stored order
// (seed 0) or in a permutation keyed by the seed (per-epoch shuffling).
// Device-safe: no exceptions, no heap; ArraySource reads caller memory (RAM,
// or flash on a microcontroller).

#include <cstddef>
#include <cstdint>

#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::data {

class Source {
 public:
  virtual ~Source() = default;
  virtual uint32_t dim() const = 0;    // features per example
  virtual uint64_t count() const = 0;  // examples in one pass
  // The next example of the pass: features into x[0, dim), label into *y;
  // kOutOfRange once the pass has visited every example.
  virtual Status next(double* x, double* y) = 0;
  // Starts a new pass: stored order for seed 0, else KeyedPermutation(count, seed).
  virtual void restart(uint64_t seed) = 0;
};

// A bijection of [0, n) chosen by a key: a four-round Feistel network on the
// smallest even number of bits covering n, with cycle walking (indices >= n
// are mapped again until they land in range). O(1) memory, so a device can
// shuffle a shard in flash without an index table.
class KeyedPermutation {
 public:
  KeyedPermutation() = default;
  KeyedPermutation(uint64_t n, uint64_t key) : n_(n), key_(key) {
    while ((uint64_t{1} << (2 * half_bits_)) < n_) ++half_bits_;
    mask_ = (uint64_t{1} << half_bits_) - 1;
  }
  uint64_t operator()(uint64_t i) const {
    uint64_t v = i;
    do v = round_trip(v);
    while (v >= n_);
    return v;
  }

 private:
  uint64_t round_trip(uint64_t v) const {
    uint64_t l = v >> half_bits_, r = v & mask_;
    for (uint64_t k = 0; k < 4; ++k) {
      const uint64_t f = Mix64(r ^ Mix64(key_ + k)) & mask_;
      const uint64_t t = r;
      r = l ^ f;
      l = t;
    }
    return (l << half_bits_) | r;
  }
  uint64_t n_ = 0, key_ = 0, mask_ = 0;
  uint32_t half_bits_ = 1;
};

// Examples in caller memory: x row-major (count x dim), y one label each.
class ArraySource final : public Source {
 public:
  ArraySource() = default;
  ArraySource(const double* x, const double* y, uint64_t count, uint32_t dim) : x_(x), y_(y), count_(count), dim_(dim) {}
  uint32_t dim() const override { return dim_; }
  uint64_t count() const override { return count_; }
  Status next(double* x, double* y) override {
    if (pos_ >= count_) return Status::OutOfRange("end of the pass");
    const uint64_t j = shuffled_ ? perm_(pos_) : pos_;
    ++pos_;
    for (uint32_t k = 0; k < dim_; ++k) x[k] = x_[j * dim_ + k];
    *y = y_[j];
    return Status::Ok();
  }
  void restart(uint64_t seed) override {
    pos_ = 0;
    shuffled_ = seed != 0;
    if (shuffled_) perm_ = KeyedPermutation(count_, seed);
  }

 private:
  const double* x_ = nullptr;
  const double* y_ = nullptr;
  uint64_t count_ = 0, pos_ = 0;
  uint32_t dim_ = 0;
  bool shuffled_ = false;
  KeyedPermutation perm_;
};

}  // namespace fedrt::data
