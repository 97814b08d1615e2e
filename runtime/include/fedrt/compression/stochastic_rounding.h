#pragma once
// Shared-scale stochastic rounding (docs/algorithms.md 4; the integer form secure
// aggregation needs): public clip c and b bits, Delta = 2c / (2^b - 1),
// u_i = (clip(v_i, -c, c) + c) / Delta, x_i = floor(u_i) + Bernoulli(frac(u_i))
// in {0, ..., 2^b - 1}, value x_i Delta - c. Unbiased for |v_i| <= c, variance
// <= Delta^2 / 4 per coordinate. Wire: d fields of b bits, no header.

#include <cmath>
#include <cstdint>

#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/quantizer.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::compression {

// Quantizes v (d entries) to b-bit integers, writes them to out[0..cap) and
// the dequantized values to `decoded`. Returns the payload size in bytes.
template <class S>
Result<size_t> RoundingEncode(const S* v, int d, uint32_t b, double c, CounterRng& rng, uint8_t* out, size_t cap,
                              S* decoded) {
  if (d <= 0) return Status::InvalidArgument("rounding: dimension must be positive");
  if (b < 1 || b > kMaxRoundingBits) return Status::InvalidArgument("rounding: bits must be in [1, 24]");
  if (!(c > 0.0) || !std::isfinite(c)) return Status::InvalidArgument("rounding: clip must be positive and finite");
  const uint32_t top = (1u << b) - 1u;
  const double delta = 2.0 * c / static_cast<double>(top);
  BitWriter w(out, cap);
  for (int i = 0; i < d; ++i) {
    double y = static_cast<double>(v[i]);
    if (std::isnan(y)) return Status::InvalidArgument("rounding: vector has a NaN entry");
    y = y < -c ? -c : (y > c ? c : y);
    double u = (y + c) / delta;
    if (u < 0) u = 0;
    if (u > top) u = top;
    uint32_t x = static_cast<uint32_t>(u);
    if (rng.uniform() < u - static_cast<double>(x)) ++x;
    if (x > top) x = top;
    if (!w.put(x, b)) return Status::ResourceExhausted("rounding: payload buffer too small");
    decoded[i] = static_cast<S>(static_cast<double>(x) * delta - c);
  }
  return w.bytes();
}

// Decodes exactly (d b + 7) / 8 bytes; rejects other lengths and nonzero padding.
template <class S>
Status RoundingDecode(const uint8_t* in, size_t n, int d, uint32_t b, double c, S* out) {
  if (d <= 0) return Status::InvalidArgument("rounding decode: dimension must be positive");
  if (b < 1 || b > kMaxRoundingBits) return Status::InvalidArgument("rounding decode: bits must be in [1, 24]");
  if (!(c > 0.0) || !std::isfinite(c)) return Status::InvalidArgument("rounding decode: clip must be positive and finite");
  const size_t expect = (static_cast<size_t>(d) * b + 7) / 8;
  if (n < expect) return Status::DataLoss("rounding decode: payload truncated");
  if (n > expect) return Status::DataLoss("rounding decode: payload longer than the dimension implies");
  const uint32_t top = (1u << b) - 1u;
  const double delta = 2.0 * c / static_cast<double>(top);
  BitReader r(in, n);
  for (int i = 0; i < d; ++i) {
    uint32_t x = 0;
    if (!r.get(b, x)) return Status::DataLoss("rounding decode: payload truncated");
    out[i] = static_cast<S>(static_cast<double>(x) * delta - c);
  }
  if (!r.rest_is_zero()) return Status::DataLoss("rounding decode: nonzero padding bits");
  return Status::Ok();
}

}  // namespace fedrt::compression
