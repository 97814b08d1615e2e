#pragma once
// Quantizer settings shared by the agent's encoder and the server's decoder
// (docs/algorithms.md 4). The settings are public session parameters, agreed once
// (experiment file / round plan); only the payload goes on the wire.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fedrt/compression/bit_stream.h"
#include "fedrt/core/status.h"

namespace fedrt::compression {

enum class QuantizerKind : uint8_t {
  kNone = 0,      // raw scalars (no codec)
  kDither = 1,    // random dithering with s levels, norm-scaled (QSGD)
  kRounding = 2,  // shared-scale stochastic rounding: public clip c, b bits
};

struct QuantizerSpec {
  QuantizerKind kind = QuantizerKind::kNone;
  uint32_t levels = 4;       // s (dithering)
  bool elias_gamma = false;  // dithering: Elias-gamma code the levels
  uint32_t bits = 8;         // b (stochastic rounding)
  double clip = 1.0;         // c (stochastic rounding)
};

constexpr uint32_t kMaxLevels = 1u << 20;  // largest s accepted by encoder and decoder
constexpr uint32_t kMaxRoundingBits = 24;  // largest b

// Checks s in [1, 2^20], b in [1, 24], c finite and positive.
inline Status ValidateSpec(const QuantizerSpec& q) {
  switch (q.kind) {
    case QuantizerKind::kNone: return Status::Ok();
    case QuantizerKind::kDither:
      if (q.levels < 1 || q.levels > kMaxLevels) return Status::InvalidArgument("quantizer: levels must be in [1, 2^20]");
      return Status::Ok();
    case QuantizerKind::kRounding:
      if (q.bits < 1 || q.bits > kMaxRoundingBits) return Status::InvalidArgument("quantizer: bits must be in [1, 24]");
      if (!(q.clip > 0.0) || !std::isfinite(q.clip)) return Status::InvalidArgument("quantizer: clip must be positive and finite");
      return Status::Ok();
  }
  return Status::InvalidArgument("quantizer: unknown kind");
}

// Variance factor of dithering: E||Q(v) - v||^2 <= omega ||v||^2 with
// omega = min(d / s^2, sqrt(d) / s) (docs/algorithms.md 4). Stochastic rounding has
// an absolute variance (<= d Delta^2 / 4), not a relative one: omega = 0 here.
inline double Omega(const QuantizerSpec& q, int dim) {
  if (q.kind != QuantizerKind::kDither) return 0.0;
  const double d = dim, s = q.levels;
  const double a = d / (s * s), b = std::sqrt(d) / s;
  return a < b ? a : b;
}

// Control-variate step alpha = 1 / (1 + omega) (DIANA; FedEM's V_c).
inline double ControlVariateStep(const QuantizerSpec& q, int dim) { return 1.0 / (1.0 + Omega(q, dim)); }

// Bytes of the float32 norm that precedes a dithered payload.
constexpr size_t kNormBytes = 4;

// Largest payload for a `dim`-vector: the buffer size an agent must reserve.
inline size_t MaxPayloadBytes(const QuantizerSpec& q, int dim) {
  const size_t d = dim > 0 ? static_cast<size_t>(dim) : 0;
  switch (q.kind) {
    case QuantizerKind::kNone: return d * 8;
    case QuantizerKind::kDither: {
      const size_t per = q.elias_gamma ? 2 * (BitWidth(q.levels + 1) - 1) + 2 : 1 + BitWidth(q.levels);
      return kNormBytes + (d * per + 7) / 8;
    }
    case QuantizerKind::kRounding: return (d * q.bits + 7) / 8;
  }
  return 0;
}

}  // namespace fedrt::compression
