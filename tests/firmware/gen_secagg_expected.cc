// Host generator of the expected outputs in secagg_bench.cc (the firmware's
// SecAgg+ round must be bit-equal to the host's SecAggDevice). Not part of
// any build; run
//   g++ -std=c++17 -O2 -I runtime/include -I tests/firmware tests/firmware/gen_secagg_expected.cc \
//       runtime/src/secagg/crypto.cc runtime/src/secagg/protocol.cc runtime/src/secagg/device.cc \
//       -lmbedcrypto -o /tmp/gen_secagg && /tmp/gen_secagg
// and paste its output when the scenario or the protocol changes on purpose.

#include <cstdio>

#include "secagg_scenario.h"

int main() {
  static fwsecagg::Buffers b;
  for (uint32_t n : {10u, 100u, 1000u}) {
    for (uint32_t d : {8u, 256u}) {
      fwsecagg::Outcome o;
      const fedrt::Status st = fwsecagg::RunRound(b, n, d, o, [](int) {});
      if (!st.ok()) {
        std::fprintf(stderr, "n=%u d=%u: %s\n", n, d, st.message());
        return 1;
      }
      std::printf("    {%u, %u, %u, %u, 0x%08xu, 0x%08xu, 0x%08xu},\n", n, d, o.k, o.t, o.y_hash, o.unmask_hash,
                  o.y0);
    }
  }
  return 0;
}
