#pragma once
// ExactSum: the exact sum of finite doubles, independent of the order in which
// they are added, rounded once to the nearest double (ties to even) when read.
// The coordinator adds the devices' updates in arrival order and the
// simulator in agent order; both read the same bits (docs/architecture.md,
// "Same iterates in every driver").
//
// Every finite double is an integer multiple of 2^-1074 below 2^1024, i.e. an
// integer of at most 2098 bits. It is kept as 67 signed 64-bit chunks of 32
// bits each: an addend adds less than 2^33 to each of three chunks, so the
// spare bits of every chunk absorb 2^20 additions before carries are
// propagated (about once per million additions). The chunks an addend can
// touch are tracked ([lo_, top_)), so clearing and reading cost the span of
// the addends' exponents (a few chunks), not all 67.
// Fixed memory (544 bytes), no heap; device-safe but meant for servers.

#include <cmath>
#include <cstdint>
#include <cstring>

namespace fedrt {

class ExactSum {
 public:
  static constexpr int kChunkBits = 32;
  static constexpr int kChunks = 67;

  void clear() {
    if (top_ > 0) std::memset(chunk_ + lo_, 0, sizeof(int64_t) * static_cast<size_t>(top_ - lo_));
    lo_ = top_ = 0;
    pending_ = 0;
  }

  // A finite x as +-mant * 2^(pos - 1074), mant < 2^53 (0 for zeros of either
  // sign); returns the sign bit. ExactSumArray splits its addends the same way.
  static bool Split(double x, uint64_t& mant, int& pos) {
    uint64_t bits;
    std::memcpy(&bits, &x, 8);
    const int e = static_cast<int>((bits >> 52) & 0x7FF);
    mant = bits & ((uint64_t{1} << 52) - 1);
    if (e != 0) mant |= uint64_t{1} << 52;
    pos = e == 0 ? 0 : e - 1;
    return (bits >> 63) != 0;
  }

  // sum += x. x must be finite (callers validate what comes from the wire).
  void add(double x) {
    uint64_t mant;
    int pos;
    const bool negative = Split(x, mant, pos);  // x = +-mant * 2^(pos - 1074)
    if (mant == 0) return;
    const int idx = pos / kChunkBits, off = pos % kChunkBits;
    const uint64_t lo = (mant & 0xFFFFFFFFu) << off;  // < 2^63
    const uint64_t hi = (mant >> 32) << off;          // < 2^52
    const int64_t c0 = static_cast<int64_t>(lo & 0xFFFFFFFFu);
    const int64_t c1 = static_cast<int64_t>((lo >> 32) + (hi & 0xFFFFFFFFu));
    const int64_t c2 = static_cast<int64_t>(hi >> 32);
    if (top_ == 0) {
      lo_ = static_cast<uint8_t>(idx);
      top_ = static_cast<uint8_t>(idx + 3);
    } else {
      if (idx < lo_) lo_ = static_cast<uint8_t>(idx);
      if (idx + 3 > top_) top_ = static_cast<uint8_t>(idx + 3);
    }
    if (negative) {
      chunk_[idx] -= c0;
      chunk_[idx + 1] -= c1;
      chunk_[idx + 2] -= c2;
    } else {
      chunk_[idx] += c0;
      chunk_[idx + 1] += c1;
      chunk_[idx + 2] += c2;
    }
    if (++pending_ == kCarryInterval) carry();
  }

  // sum += v * 2^(32 k - 1074), |v| < 2^32, 0 <= k < kChunks: takes over the
  // exact value of a wider accumulator chunk by chunk (ExactSumArray's promotion).
  void add_chunk(int k, int64_t v) {
    if (v == 0) return;
    if (top_ == 0) {
      lo_ = static_cast<uint8_t>(k);
      top_ = static_cast<uint8_t>(k + 1);
    } else {
      if (k < lo_) lo_ = static_cast<uint8_t>(k);
      if (k + 1 > top_) top_ = static_cast<uint8_t>(k + 1);
    }
    chunk_[k] += v;
    if (++pending_ == kCarryInterval) carry();
  }

  // The exact sum rounded to the nearest double (ties to even); +-inf when it
  // exceeds the double range.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  double value() const {
    if (top_ == 0) return 0.0;
    // The touched chunks and one above them for the carry, normalized there
    // (every chunk but the window's top into [0, 2^32), the top signed).
    const int lo = lo_, end = top_ < kChunks ? top_ + 1 : kChunks;
    int64_t c[kChunks];  // only [lo, end) is read; GCC cannot see that it is never empty
    for (int i = lo; i < end; ++i) c[i] = i < top_ ? chunk_[i] : 0;
    Normalize(c, lo, end);
    const bool negative = c[end - 1] < 0;
    if (negative) {
      for (int i = lo; i < end; ++i) c[i] = -c[i];
      Normalize(c, lo, end);
    }
    auto at = [&](int i) { return i >= lo && i < end ? c[i] : int64_t{0}; };
    int top = end - 1;
    while (top >= lo && c[top] == 0) --top;
    if (top < lo) return 0.0;
    const uint64_t h = static_cast<uint64_t>(c[top]);
    int len = 0;  // bit length of the top chunk, 1..32
    while (len < 32 && (h >> len) != 0) ++len;
    double r;
    if (top * kChunkBits + len <= 53) {  // fewer than 54 bits: exactly representable
      const uint64_t v = top == 0 ? h : (h << kChunkBits) | static_cast<uint64_t>(at(0));
      r = std::ldexp(static_cast<double>(v), -1074);
    } else {
      // W = the 64 leading bits of the 96-bit window h:m:l; the bits below W
      // (the low `len` bits of l and every lower chunk) only set `sticky`.
      const uint64_t m = static_cast<uint64_t>(at(top - 1));
      const uint64_t l = top >= 2 ? static_cast<uint64_t>(at(top - 2)) : 0;
      const uint64_t w = (h << (64 - len)) | (m << (32 - len)) | (l >> len);
      bool sticky = (l & ((uint64_t{1} << len) - 1)) != 0;
      for (int i = lo; i < top - 2 && !sticky; ++i) sticky = c[i] != 0;
      uint64_t mant = w >> 11;  // 53 bits, leading one set
      const bool half = (w >> 10) & 1u;
      const bool below = (w & 0x3FFu) != 0 || sticky;
      if (half && (below || (mant & 1u))) ++mant;
      r = std::ldexp(static_cast<double>(mant), (top - 2) * kChunkBits + len + 11 - 1074);
    }
    return negative ? -r : r;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

 private:
  static constexpr uint32_t kCarryInterval = 1u << 20;

  void carry() {
    const int end = top_ < kChunks ? top_ + 1 : kChunks;
    Normalize(chunk_, lo_, end);
    top_ = static_cast<uint8_t>(end);
    pending_ = 0;
  }
  // Chunks [lo, end - 1) into [0, 2^32), carrying upward; chunk end - 1 keeps the sign.
  static void Normalize(int64_t* c, int lo, int end) {
    for (int i = lo; i < end - 1; ++i) {
      const int64_t k = c[i] >> kChunkBits;  // floor division by 2^32
      c[i] -= k * (int64_t{1} << kChunkBits);
      c[i + 1] += k;
    }
  }
  int64_t chunk_[kChunks] = {};
  uint32_t pending_ = 0;
  uint8_t lo_ = 0, top_ = 0;  // the chunks touched since clear(): [lo_, top_); top_ = 0: none
};

}  // namespace fedrt
