#pragma once
// Random dithering with s levels (QSGD; "Quant" in the FedEM talk;
// docs/algorithms.md 4): Q(v)_i = r sgn(v_i) (l_i + B_i) / s, l_i = floor(s|v_i|/r),
// B_i ~ Bernoulli(s|v_i|/r - l_i), where r is ||v||_2 rounded UP to a float32
// (so the wire norm is exact and Q stays unbiased). Wire: the float32 norm
// (little endian), then per coordinate a sign bit and the level l + B
// (ceil(log2(s+1)) bits), or with Elias gamma: gamma(l + B + 1) and a sign bit
// only for a nonzero level. Device code: caller buffers, no heap.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/quantizer.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::compression {

namespace detail {

// ||v||_2 in double with scaling, so neither huge nor tiny entries over/underflow.
template <class S>
inline double ScaledNorm(const S* v, int d) {
  double m = 0;
  for (int i = 0; i < d; ++i) {
    const double a = std::fabs(static_cast<double>(v[i]));
    if (std::isnan(a)) return a;
    if (a > m) m = a;
  }
  if (!(m > 0) || !std::isfinite(m)) return m;
  double sum = 0;
  for (int i = 0; i < d; ++i) {
    const double x = static_cast<double>(v[i]) / m;
    sum += x * x;
  }
  return m * std::sqrt(sum);
}

inline void PutF32(uint8_t* out, float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(u >> (8 * i));
}
inline float GetF32(const uint8_t* in) {
  uint32_t u = 0;
  for (int i = 0; i < 4; ++i) u |= static_cast<uint32_t>(in[i]) << (8 * i);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline bool PutEliasGamma(BitWriter& w, uint32_t n) {  // n >= 1
  const unsigned len = BitWidth(n);                   // floor(log2 n) + 1
  if (!w.put(0, len - 1)) return false;
  for (unsigned i = len; i-- > 0;)
    if (!w.put((n >> i) & 1u, 1)) return false;
  return true;
}
inline bool GetEliasGamma(BitReader& r, uint32_t max_value, uint32_t& n) {
  const unsigned max_zeros = BitWidth(max_value) - 1;
  unsigned zeros = 0;
  uint32_t bit = 0;
  for (;;) {
    if (!r.get(1, bit)) return false;
    if (bit) break;
    if (++zeros > max_zeros) return false;
  }
  uint32_t v = 1;
  for (unsigned i = 0; i < zeros; ++i) {
    if (!r.get(1, bit)) return false;
    v = (v << 1) | bit;
  }
  if (v > max_value) return false;
  n = v;
  return true;
}

}  // namespace detail

// Quantizes v (d entries) with s levels, writes the payload to out[0..cap) and
// the dequantized Q(v) to `decoded` (exactly what Decode returns for those
// bytes). Returns the payload size in bytes. One uniform draw per coordinate.
template <class S>
Result<size_t> DitherEncode(const S* v, int d, uint32_t s, bool elias, CounterRng& rng, uint8_t* out, size_t cap,
                            S* decoded) {
  if (d <= 0) return Status::InvalidArgument("dither: dimension must be positive");
  if (s < 1 || s > kMaxLevels) return Status::InvalidArgument("dither: levels must be in [1, 2^20]");
  if (cap < kNormBytes) return Status::ResourceExhausted("dither: payload buffer too small");
  const double r = detail::ScaledNorm(v, d);
  if (!std::isfinite(r)) return Status::InvalidArgument("dither: vector has a NaN or infinite entry");
  if (r > 3.4028234663852886e38) return Status::OutOfRange("dither: norm exceeds the float32 range of the wire");
  float rf = static_cast<float>(r);
  if (static_cast<double>(rf) < r) rf = std::nextafter(rf, INFINITY);
  if (std::isinf(rf)) return Status::OutOfRange("dither: norm exceeds the float32 range of the wire");
  detail::PutF32(out, rf);
  BitWriter w(out + kNormBytes, cap - kNormBytes);
  const unsigned width = BitWidth(s);
  const double rr = rf;
  const S scale = static_cast<S>(rf);
  for (int i = 0; i < d; ++i) {
    const double a = std::fabs(static_cast<double>(v[i]));
    uint32_t level = 0;
    if (rr > 0) {
      double x = static_cast<double>(s) * (a / rr);
      if (x >= static_cast<double>(s)) x = static_cast<double>(s);
      level = static_cast<uint32_t>(x);
      const double frac = x - static_cast<double>(level);
      if (rng.uniform() < frac) ++level;
      if (level > s) level = s;
    } else {
      (void)rng.uniform();  // keep one draw per coordinate
    }
    const uint32_t neg = (level != 0 && v[i] < S(0)) ? 1u : 0u;
    bool ok;
    if (elias) {
      ok = detail::PutEliasGamma(w, level + 1);
      if (ok && level != 0) ok = w.put(neg, 1);
    } else {
      ok = w.put(neg, 1) && w.put(level, width);
    }
    if (!ok) return Status::ResourceExhausted("dither: payload buffer too small");
    const S mag = scale * (static_cast<S>(level) / static_cast<S>(s));
    decoded[i] = neg ? -mag : mag;
  }
  return kNormBytes + w.bytes();
}

// Decodes a dithered payload of exactly `n` bytes into out[0..d). Rejects
// truncated or over-long payloads, a NaN/Inf/negative norm, levels above s,
// a sign on a zero level, nonzero padding bits, and nonzero levels with a zero
// norm. Never reads outside in[0..n).
template <class S>
Status DitherDecode(const uint8_t* in, size_t n, int d, uint32_t s, bool elias, S* out) {
  if (d <= 0) return Status::InvalidArgument("dither decode: dimension must be positive");
  if (s < 1 || s > kMaxLevels) return Status::InvalidArgument("dither decode: levels must be in [1, 2^20]");
  if (n < kNormBytes) return Status::DataLoss("dither decode: payload truncated (no norm)");
  const float rf = detail::GetF32(in);
  if (!std::isfinite(rf)) return Status::DataLoss("dither decode: norm is NaN or infinite");
  if (rf < 0.0f) return Status::DataLoss("dither decode: negative norm");
  if (!elias) {
    const size_t expect = kNormBytes + (static_cast<size_t>(d) * (1 + BitWidth(s)) + 7) / 8;
    if (n < expect) return Status::DataLoss("dither decode: payload truncated");
    if (n > expect) return Status::DataLoss("dither decode: payload longer than the dimension implies");
  }
  BitReader r(in + kNormBytes, n - kNormBytes);
  const unsigned width = BitWidth(s);
  const S scale = static_cast<S>(rf);
  for (int i = 0; i < d; ++i) {
    uint32_t neg = 0, level = 0;
    if (elias) {
      uint32_t code = 0;
      if (!detail::GetEliasGamma(r, s + 1, code)) {
        return r.remaining() == 0 ? Status::DataLoss("dither decode: payload truncated")
                                  : Status::DataLoss("dither decode: invalid Elias-gamma level");
      }
      level = code - 1;
      if (level != 0 && !r.get(1, neg)) return Status::DataLoss("dither decode: payload truncated");
    } else {
      if (!r.get(1, neg) || !r.get(width, level)) return Status::DataLoss("dither decode: payload truncated");
      if (level > s) return Status::DataLoss("dither decode: level exceeds the number of levels");
      if (level == 0 && neg) return Status::DataLoss("dither decode: sign bit set on a zero level");
    }
    if (level != 0 && rf == 0.0f) return Status::DataLoss("dither decode: nonzero level with a zero norm");
    const S mag = scale * (static_cast<S>(level) / static_cast<S>(s));
    out[i] = neg ? -mag : mag;
  }
  if (r.remaining() >= 8) return Status::DataLoss("dither decode: payload longer than its levels");
  if (!r.rest_is_zero()) return Status::DataLoss("dither decode: nonzero padding bits");
  return Status::Ok();
}

}  // namespace fedrt::compression
