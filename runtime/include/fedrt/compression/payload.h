#pragma once
// The payload codec: a vector -> the exact bytes of an update payload -> back
// (docs/algorithms.md 4). Dispatches on the quantizer of the session; `kNone`
// sends raw little-endian float64 values. Bits on the wire = 8 * bytes.
// Device code: caller buffers, no heap, no exceptions; float or double.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "fedrt/compression/dithering.h"
#include "fedrt/compression/quantizer.h"
#include "fedrt/compression/stochastic_rounding.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::compression {

// Q(v) -> payload bytes in out[0..cap); `decoded` receives exactly what
// Decode(payload) yields. Returns the payload size in bytes.
template <class S>
Result<size_t> Encode(const QuantizerSpec& q, const S* v, int d, CounterRng& rng, uint8_t* out, size_t cap,
                      S* decoded) {
  switch (q.kind) {
    case QuantizerKind::kDither: return DitherEncode(v, d, q.levels, q.elias_gamma, rng, out, cap, decoded);
    case QuantizerKind::kRounding: return RoundingEncode(v, d, q.bits, q.clip, rng, out, cap, decoded);
    case QuantizerKind::kNone: {
      if (d <= 0) return Status::InvalidArgument("codec: dimension must be positive");
      if (cap < static_cast<size_t>(d) * 8) return Status::ResourceExhausted("codec: payload buffer too small");
      for (int i = 0; i < d; ++i) {
        const double x = static_cast<double>(v[i]);
        uint64_t u;
        std::memcpy(&u, &x, 8);
        for (int k = 0; k < 8; ++k) out[8 * i + k] = static_cast<uint8_t>(u >> (8 * k));
        decoded[i] = static_cast<S>(x);
      }
      return static_cast<size_t>(d) * 8;
    }
  }
  return Status::InvalidArgument("codec: unknown quantizer");
}

// Payload in[0..n) -> out[0..d). Untrusted input: every field is validated and
// nothing outside in[0..n) or out[0..d) is touched; on error `out` may hold
// partial values and the caller must discard it.
template <class S>
Status Decode(const QuantizerSpec& q, const uint8_t* in, size_t n, int d, S* out) {
  switch (q.kind) {
    case QuantizerKind::kDither: return DitherDecode(in, n, d, q.levels, q.elias_gamma, out);
    case QuantizerKind::kRounding: return RoundingDecode(in, n, d, q.bits, q.clip, out);
    case QuantizerKind::kNone: {
      if (d <= 0) return Status::InvalidArgument("codec: dimension must be positive");
      if (n != static_cast<size_t>(d) * 8) return Status::DataLoss("codec: raw payload has the wrong length");
      for (int i = 0; i < d; ++i) {
        uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u |= static_cast<uint64_t>(in[8 * i + k]) << (8 * k);
        double x;
        std::memcpy(&x, &u, 8);
        if (!std::isfinite(x)) return Status::DataLoss("codec: raw payload has a NaN or infinite value");
        if (!std::isfinite(static_cast<S>(x))) return Status::DataLoss("codec: raw value out of the scalar's range");
        out[i] = static_cast<S>(x);
      }
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("codec: unknown quantizer");
}

}  // namespace fedrt::compression
