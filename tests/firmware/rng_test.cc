// CounterRng on the microcontroller gives the host's values bit for bit
// (the fleet's equality with the simulator depends on it). Values printed
// on x86-64 by the host build of the same header.

#include <string.h>

#include "fedrt/core/rng.h"
#include "fw_check.h"

int main() {
  using fedrt::CounterRng;
  using fedrt::RngStream;
  FW_CHECK(fedrt::RngKey(42, 1, 7, 3, RngStream::kLocalSteps) == 0x71dc7833a27dcde0ull);
  CounterRng r(42, 1, 7, 3, RngStream::kLocalSteps);
  const uint64_t want[4] = {0x7dcceb830da8e8ffull, 0x2277d56baab44dc6ull, 0x398d67da4770f8d0ull,
                            0x950fe40e873b7989ull};
  for (uint64_t w : want) FW_CHECK(r.next_u64() == w);

  CounterRng r2(12345, 0, 3, 9, RngStream::kCompression);
  const float f = r2.uniform_f();
  uint32_t fbits;
  memcpy(&fbits, &f, 4);
  FW_CHECK(fbits == 0x3f6c0e26u);
  const double d = r2.uniform();
  FW_CHECK(d == 0x1.dd5b8d44a630cp-1);
  FW_CHECK(r2.below(1000) == 591u);

  CounterRng r3(0x1234, 5);  // jump to step 5 of a stream
  FW_CHECK(r3.next_u64() == 0x1e2ac6b725fc033eull);
  return fw_result("rng_test");
}
