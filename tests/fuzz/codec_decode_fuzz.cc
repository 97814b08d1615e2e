// libFuzzer target for the wire decoder (runtime/include/fedrt/compression/payload.h).
// Input: 4 bytes choosing the session (quantizer kind, levels / bits, Elias
// gamma, dimension, scalar type), then the untrusted payload. Properties:
// no out-of-bounds access or UB (ASan/UBSan), and every accepted payload
// decodes to finite values bounded by its norm (dithering) or clip (rounding).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fedrt/compression/payload.h"

using namespace fedrt;
using namespace fedrt::compression;

template <class S>
static void Check(const QuantizerSpec& q, const uint8_t* payload, size_t n, int d) {
  // The payload is copied into an exact-size heap block so any overread traps.
  std::vector<uint8_t> in(payload, payload + n);
  std::vector<S> out(static_cast<size_t>(d));
  Status st = Decode<S>(q, in.data(), in.size(), d, out.data());
  if (!st.ok()) {
    if (st.message()[0] == '\0') std::abort();  // every rejection names its reason
    return;
  }
  double bound = 0;
  if (q.kind == QuantizerKind::kDither) {
    float rf;
    std::memcpy(&rf, in.data(), 4);
    bound = rf;
  } else if (q.kind == QuantizerKind::kRounding) {
    bound = q.clip * (1 + 1e-6);
  } else {
    bound = INFINITY;
  }
  for (int i = 0; i < d; ++i) {
    if (!std::isfinite(static_cast<double>(out[i]))) std::abort();
    if (std::fabs(static_cast<double>(out[i])) > bound * (1 + 1e-6)) std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  QuantizerSpec q;
  const uint8_t sel = data[0];
  q.kind = static_cast<QuantizerKind>(sel % 3);
  q.elias_gamma = (sel >> 2) & 1;
  const bool use_float = (sel >> 3) & 1;
  q.levels = 1u + data[1];                // s in [1, 256]
  if (sel & 0x10) q.levels <<= 12;        // and up to 2^20
  q.bits = 1u + data[1] % kMaxRoundingBits;
  q.clip = 0.5 + data[1];
  const int d = 1 + data[2] + 256 * (data[3] & 0x3);  // 1..1024
  if (use_float) Check<float>(q, data + 4, size - 4, d);
  else Check<double>(q, data + 4, size - 4, d);
  return 0;
}
