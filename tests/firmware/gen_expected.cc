// Host generator of the reference numbers embedded in the firmware tests
// (lsa_test.cc, codec_test.cc, rng_test.cc). Not part of any build; run
//   g++ -std=c++17 -O2 -I runtime/include -I /usr/include/eigen3 -I platform/mps2 \
//       tests/firmware/gen_expected.cc -o /tmp/gen && /tmp/gen
// and paste its output when the scenario or the cores change on purpose.

#include <cinttypes>
#include <cstdio>

#include "fedrt/compression/dithering.h"
#include "lsa_scenario.h"

int main() {
  using fedrt::algorithms::LsaAlgorithm;
  for (LsaAlgorithm alg : {LsaAlgorithm::kFedLsa, LsaAlgorithm::kScaffLsa}) {
    const fwtest::Outcome o = fwtest::Run<double>(alg);
    std::printf("// %s, double on the host (ok=%d, max |sum xi|=%g)\n", LsaAlgorithmName(alg), o.ok,
                o.xi_sum_max_abs);
    std::printf("{");
    for (int i = 0; i < fwtest::kDim; ++i) std::printf("%.9ef%s", o.theta[i], i + 1 < fwtest::kDim ? ", " : "");
    std::printf("}\n");
  }
  // Dithering payloads of a fixed float vector (fixed-width and Elias gamma).
  const float v[8] = {0.75f, -1.5f, 0.0f, 2.25f, -0.125f, 3.0f, -2.0f, 0.5f};
  for (bool elias : {false, true}) {
    fedrt::CounterRng rng(777, 0, 1, 2, fedrt::RngStream::kCompression);
    uint8_t out[64];
    float dec[8];
    auto n = fedrt::compression::DitherEncode<float>(v, 8, 15, elias, rng, out, sizeof out, dec);
    std::printf("// dither s=15 elias=%d: %zu bytes\n{", elias, *n);
    for (size_t i = 0; i < *n; ++i) std::printf("0x%02x%s", out[i], i + 1 < *n ? ", " : "");
    std::printf("}\n");
  }
  return 0;
}
