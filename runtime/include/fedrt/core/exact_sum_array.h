#pragma once
// ExactSumArray: n exact sums of doubles side by side, each read with the bits
// ExactSum (core/exact_sum.h) gives for the same addends: the exact sum,
// rounded once to nearest (ties to even), +0.0 when it is zero, +-inf beyond
// the double range. About 26 bytes per coordinate instead of ExactSum's 544.
//
// Coordinate i holds a 192-bit two's-complement integer A (three 64-bit limbs)
// and a scale s (int16): its sum is A * 2^(s - 1074). Between additions A stays
// in [-2^190, 2^190). An addend x = +-m 2^(p - 1074) (m < 2^53) whose bits
// fall 0..136 places above s while A leaves two bits of headroom is added in
// place (the common case). Otherwise the coordinate is rebased: s moves to
// where the sum and x both fit, A shifted exactly (down only over its zero
// low bits), with up to 64 spare bits kept below. When the exact result would
// span more than 190 bits (e.g. 1e30 + 1e-30) the coordinate is promoted:
// its value moves exactly into a full ExactSum slot and later addends go there.
//
// Slots: PoolSlots(n) = 1 + n/128 ExactSums come from the arena with the rest
// (4.25 bytes per coordinate; ArenaBytes(n) is about 30.25 n). Host builds
// (FEDRT_HOST) take further slots from the heap, so a coordinator stays exact
// for every input, adversarial ones included (at worst ExactSum's 544 bytes
// per coordinate, until clear()). Device builds have no heap: a promotion
// that finds the pool full marks that coordinate lost; it reads NaN (never a
// wrong finite value) and status() says RESOURCE_EXHAUSTED until clear().
// A coordinate needs a slot only when its addends span more than ~137 binary
// orders of magnitude (ratio above ~1e41), which no real update does.
//
// Not thread-safe: promotions share the slot pool, so concurrent add() on
// different coordinates of one array is only safe when none can promote.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#if defined(FEDRT_HOST)
#include <vector>
#endif

#include "fedrt/core/arena.h"
#include "fedrt/core/exact_sum.h"
#include "fedrt/core/status.h"

namespace fedrt {

class ExactSumArray {
 public:
  // ExactSum slots carved from the arena for promoted coordinates.
  static constexpr size_t PoolSlots(size_t n) { return n == 0 ? 0 : 1 + n / 128; }
  // Arena bytes that create(arena, n) needs.
  static constexpr size_t ArenaBytes(size_t n) {
    return (3 * sizeof(uint64_t) + sizeof(int16_t)) * n + sizeof(ExactSum) * PoolSlots(n) + 3 * Arena::kAlignment;
  }

  ExactSumArray() = default;

  // n zero sums (limbs, scales and slot pool from `arena`).
  static Result<ExactSumArray> create(Arena& arena, size_t n) {
    auto limbs = arena.allocate<uint64_t>(3 * n);
    if (!limbs.ok()) return limbs.status();
    auto scales = arena.allocate<int16_t>(n);
    if (!scales.ok()) return scales.status();
    auto pool = arena.allocate<ExactSum>(PoolSlots(n));
    if (!pool.ok()) return pool.status();
    ExactSumArray a;
    a.n_ = n;
    a.limb_ = limbs->data;
    a.scale_ = scales->data;
    a.pool_ = pool->data;
    a.pool_size_ = pool->size;
    return a;
  }

  // The number of sums.
  size_t size() const { return n_; }

  // Every sum to zero (and the slots back to the pool); status() to OK.
  void clear() {
    if (n_ == 0) return;
    std::memset(limb_, 0, 3 * sizeof(uint64_t) * n_);
    std::memset(scale_, 0, sizeof(int16_t) * n_);
    used_ = 0;
    lost_ = 0;
#if defined(FEDRT_HOST)
    if (!spill_.empty()) std::vector<ExactSum>().swap(spill_);
#endif
  }

  // sum_i += x. x must be finite (as for ExactSum); zeros of either sign are skipped.
  void add(size_t i, double x) {
    uint64_t mant;
    int pos;
    const bool negative = ExactSum::Split(x, mant, pos);  // x = +-mant * 2^(pos - 1074)
    if (mant == 0) return;
    uint64_t* a = limb_ + 3 * i;
    // Fast path: 0 <= pos - s <= 136 and A in [-2^189, 2^189) (a promoted or
    // lost coordinate's sentinel scale fails the first test).
    const unsigned sh = static_cast<unsigned>(pos - scale_[i]);
    if (sh <= 136 && ((a[2] + (uint64_t{1} << 61)) >> 62) == 0) {
      AddShifted(a, mant, static_cast<int>(sh), negative);
      return;
    }
    add_slow(i, x, mant, pos, negative);
  }

  // sum_i rounded to the nearest double, ties to even (ExactSum::value()'s
  // bits); NaN for a coordinate lost to a full pool (device builds).
  double value(size_t i) const {
    const uint64_t* a = limb_ + 3 * i;
    const int s = scale_[i];
    if (s == kPromoted) return slot(a[0]).value();
    if (s == kLost) return std::numeric_limits<double>::quiet_NaN();
    uint64_t m[3] = {a[0], a[1], a[2]};
    const bool negative = (m[2] >> 63) != 0;
    if (negative) Negate(m);
    const int len = BitLength(m);  // <= 190
    if (len == 0) return 0.0;
    double r;
    if (len <= 53) {
      r = std::ldexp(static_cast<double>(m[0]), s - 1074);  // exact (or +-inf)
    } else {
      // w: the 64 leading bits of |A|; the bits below only set `sticky`.
      uint64_t w;
      bool sticky = false;
      if (len <= 64) {
        w = m[0] << (64 - len);
      } else {
        sticky = TrailingZeros(m) < len - 64;
        ShiftRight(m, len - 64);
        w = m[0];
      }
      uint64_t mant = w >> 11;  // 53 bits, leading one set
      const bool half = ((w >> 10) & 1u) != 0;
      const bool below = (w & 0x3FFu) != 0 || sticky;
      if (half && (below || (mant & 1u))) ++mant;
      // A normal number (>= 2^-1021) or +-inf: ldexp rounds nothing.
      r = std::ldexp(static_cast<double>(mant), s + len - 53 - 1074);
    }
    return negative ? -r : r;
  }

  // OK, or RESOURCE_EXHAUSTED when a device build lost coordinates since clear().
  Status status() const {
    if (lost_ == 0) return Status::Ok();
    return Status::ResourceExhausted("exact sum array: no slot left to promote a coordinate; it reads NaN");
  }
  // Coordinates held by a full ExactSum slot since clear().
  size_t promoted() const { return used_; }
  // Coordinates lost to a full pool since clear() (device builds only).
  size_t lost() const { return lost_; }

 private:
  static constexpr int16_t kPromoted = INT16_MIN;      // limb 0 holds the slot's index
  static constexpr int16_t kLost = INT16_MIN + 1;      // reads NaN until clear()
  static constexpr int kWidth = 190;                   // A in [-2^190, 2^190)
  static constexpr int kSpareBelow = 64;               // low bits kept free on a rebase

  void add_slow(size_t i, double x, uint64_t mant, int pos, bool negative) {
    uint64_t* a = limb_ + 3 * i;
    int16_t& scale = scale_[i];
    if (scale == kPromoted) {
      slot(a[0]).add(x);
      return;
    }
    if (scale == kLost) return;
    const int tz = __builtin_ctzll(mant);  // x = +-mant 2^(pos - 1074), mant odd
    mant >>= tz;
    pos += tz;
    const int mbits = 64 - __builtin_clzll(mant);
    const int s = scale;
    const bool zero = (a[0] | a[1] | a[2]) == 0;
    // The sum's bits lie in [lo, hi) with |sum| < 2^hi (absolute positions).
    int lo = pos, hi = pos + mbits;
    if (!zero) {
      const int a_lo = s + TrailingZeros(a);
      const int a_hi = s + SignedWidth(a) - 1;  // |A 2^s| <= 2^a_hi
      if (a_lo < lo) lo = a_lo;
      hi = (a_hi > hi ? a_hi : hi) + 1;
    }
    if (hi - lo > kWidth) {
      promote(i, x);
      return;
    }
    const int spare = (kWidth - (hi - lo)) / 2;
    int ns = lo - (spare < kSpareBelow ? spare : kSpareBelow);
    if (ns < 0) ns = 0;
    if (!zero) {
      if (ns < s) ShiftLeft(a, s - ns);
      if (ns > s) ShiftRightArithmetic(a, ns - s);  // only zero bits leave
    }
    scale = static_cast<int16_t>(ns);
    AddShifted(a, mant, pos - ns, negative);
  }

  // Moves coordinate i's exact value into a slot, then adds x there.
  void promote(size_t i, double x) {
    uint64_t* a = limb_ + 3 * i;
    uint64_t k;
    if (!take_slot(k)) {
      scale_[i] = kLost;
      ++lost_;
      return;
    }
    ExactSum& e = slot(k);
    e.clear();
    uint64_t m[3] = {a[0], a[1], a[2]};
    const bool negative = (m[2] >> 63) != 0;
    if (negative) Negate(m);
    // |A| 2^s in ExactSum's 32-bit chunks: shift by s mod 32 into four limbs,
    // then chunk s/32 + j gets bits [32 j, 32 j + 32).
    const int s = scale_[i], off = s % 32;
    const uint64_t t[4] = {m[0] << off, (m[1] << off) | (off ? m[0] >> (64 - off) : 0),
                           (m[2] << off) | (off ? m[1] >> (64 - off) : 0), off ? m[2] >> (64 - off) : 0};
    for (int j = 0; j < 8; ++j) {
      const int64_t piece = static_cast<int64_t>((t[j / 2] >> (32 * (j % 2))) & 0xFFFFFFFFu);
      if (piece != 0) e.add_chunk(s / 32 + j, negative ? -piece : piece);
    }
    e.add(x);
    a[0] = k;
    a[1] = a[2] = 0;
    scale_[i] = kPromoted;
  }

  bool take_slot(uint64_t& k) {
    if (used_ < pool_size_) {
      k = used_++;
      return true;
    }
#if defined(FEDRT_HOST)
    spill_.emplace_back();
    k = used_++;
    return true;
#else
    return false;
#endif
  }
  ExactSum& slot(uint64_t k) {
#if defined(FEDRT_HOST)
    if (k >= pool_size_) return spill_[k - pool_size_];
#endif
    return pool_[k];
  }
  const ExactSum& slot(uint64_t k) const { return const_cast<ExactSumArray*>(this)->slot(k); }

  // A += +-m 2^sh, for m < 2^53 and sh + bitlength(m) <= 190.
  static void AddShifted(uint64_t* a, uint64_t m, int sh, bool negative) {
    const int q = sh >> 6, r = sh & 63;
    const uint64_t lo = m << r, hi = r != 0 ? m >> (64 - r) : 0;
    uint64_t v0 = q == 0 ? lo : 0;
    uint64_t v1 = q == 0 ? hi : q == 1 ? lo : 0;
    uint64_t v2 = q == 1 ? hi : q == 2 ? lo : 0;
    const uint64_t flip = negative ? ~uint64_t{0} : 0;  // -v = ~v + 1
    v0 ^= flip;
    v1 ^= flip;
    v2 ^= flip;
    uint64_t carry = flip & 1u;
    const uint64_t s0 = a[0] + v0;
    const uint64_t c0 = (s0 < v0) + ((s0 + carry) < carry);
    a[0] = s0 + carry;
    carry = c0;
    const uint64_t s1 = a[1] + v1;
    const uint64_t c1 = (s1 < v1) + ((s1 + carry) < carry);
    a[1] = s1 + carry;
    a[2] = a[2] + v2 + c1;
  }
  static void Negate(uint64_t* a) {
    a[0] = ~a[0] + 1;
    const uint64_t c = a[0] == 0;
    a[1] = ~a[1] + c;
    a[2] = ~a[2] + (c && a[1] == 0);
  }
  static int BitLength(const uint64_t* a) {
    if (a[2] != 0) return 192 - __builtin_clzll(a[2]);
    if (a[1] != 0) return 128 - __builtin_clzll(a[1]);
    return a[0] != 0 ? 64 - __builtin_clzll(a[0]) : 0;
  }
  // The least w with A in [-2^(w-1), 2^(w-1)).
  static int SignedWidth(const uint64_t* a) {
    const uint64_t sign = (a[2] >> 63) != 0 ? ~uint64_t{0} : 0;
    const uint64_t b[3] = {a[0] ^ sign, a[1] ^ sign, a[2] ^ sign};
    return BitLength(b) + 1;
  }
  static int TrailingZeros(const uint64_t* a) {  // a != 0
    if (a[0] != 0) return __builtin_ctzll(a[0]);
    if (a[1] != 0) return 64 + __builtin_ctzll(a[1]);
    return 128 + __builtin_ctzll(a[2]);
  }
  static void ShiftLeft(uint64_t* a, int k) {  // 0 < k < 192
    for (; k >= 64; k -= 64) {
      a[2] = a[1];
      a[1] = a[0];
      a[0] = 0;
    }
    if (k == 0) return;
    a[2] = (a[2] << k) | (a[1] >> (64 - k));
    a[1] = (a[1] << k) | (a[0] >> (64 - k));
    a[0] <<= k;
  }
  static void ShiftRight(uint64_t* a, int k) { ShiftRightWith(a, k, 0); }
  static void ShiftRightArithmetic(uint64_t* a, int k) {
    ShiftRightWith(a, k, (a[2] >> 63) != 0 ? ~uint64_t{0} : 0);
  }
  static void ShiftRightWith(uint64_t* a, int k, uint64_t fill) {  // 0 < k < 192
    for (; k >= 64; k -= 64) {
      a[0] = a[1];
      a[1] = a[2];
      a[2] = fill;
    }
    if (k == 0) return;
    a[0] = (a[0] >> k) | (a[1] << (64 - k));
    a[1] = (a[1] >> k) | (a[2] << (64 - k));
    a[2] = (a[2] >> k) | (fill << (64 - k));
  }

  size_t n_ = 0;
  uint64_t* limb_ = nullptr;  // 3 n: A of coordinate i in limb_[3i..3i+2], least significant first
  int16_t* scale_ = nullptr;  // n: s, or kPromoted / kLost
  ExactSum* pool_ = nullptr;
  size_t pool_size_ = 0;
  size_t used_ = 0;  // slots handed out since clear() (pool first, then the heap)
  size_t lost_ = 0;
#if defined(FEDRT_HOST)
  std::vector<ExactSum> spill_;  // slots beyond the pool
#endif
};

}  // namespace fedrt
