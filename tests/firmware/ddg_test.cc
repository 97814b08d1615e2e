// The distributed mechanism on the microcontroller (docs/privacy.md,
// "Distributed DP under SecAgg+"): the exact discrete Gaussian sampler and a
// device's codec give the host's integers bit for bit from the same bits
// (integer arithmetic, and IEEE doubles in the rotation), so a fleet under
// privacy.test_seed draws the simulator's noise; and 20000 draws in fixed
// memory have the variance they claim. Values printed on x86-64 by the
// host build of the same headers.

#include "fedrt/privacy/ddg_codec.h"
#include "fw_check.h"

int main() {
  using fedrt::CounterRng;
  using fedrt::RngKey;
  using fedrt::RngStream;
  namespace privacy = fedrt::privacy;

  CounterRng r(RngKey(17, 0, 0, 65536, RngStream::kDdgTestNoise));
  const int64_t want_wide[8] = {116, 414, 198, 14, 316, -169, -402, -74};
  for (int64_t w : want_wide) FW_CHECK(privacy::DiscreteGaussian(r, 65536) == w);
  CounterRng r4(RngKey(5, 1, 2, 3, RngStream::kDdgTestNoise));
  const int64_t want_narrow[8] = {3, 0, 2, 1, 0, -4, -2, 0};
  for (int64_t w : want_narrow) FW_CHECK(privacy::DiscreteGaussian(r4, 4) == w);

  // A device's update (float, as the firmware holds it) through the codec.
  const float x[5] = {0.1f, -0.2f, 0.3f, 0.05f, -0.4f};
  privacy::DdgRound round;
  FW_CHECK(privacy::DdgPlan(1.0, 1.0, 800000, 1024, 10, 5, 20, round) == nullptr);
  FW_CHECK(round.m == 8 && round.d_pad == 8 && round.bound_sq == 8285);
  CounterRng bits(privacy::DdgTestNoiseKey(7, 0, 0, 3, 0));
  double work[8];
  uint32_t out[8];
  FW_CHECK(privacy::DdgEncode(x, round, privacy::DdgRotationSeed(1, 0, 0, 0), bits, work, out).ok());
  const uint32_t want_codec[8] = {60u, 29u, 32u, 1048554u, 1048570u, 1048501u, 1048573u, 1048536u};
  for (int i = 0; i < 8; ++i) FW_CHECK(out[i] == want_codec[i]);

  // 20000 draws at s2 = 1024: the sample variance's standard error is
  // s2 sqrt(2 / 20000) = 1 %, and 5 % is allowed.
  CounterRng s(RngKey(3, 0, 0, 0, RngStream::kDdgTestNoise));
  int64_t sum = 0, sq = 0;
  for (int i = 0; i < 20000; ++i) {
    const int64_t v = privacy::DiscreteGaussian(s, 1024);
    sum += v;
    sq += v * v;
  }
  const double mean = static_cast<double>(sum) / 20000, var = static_cast<double>(sq) / 20000 - mean * mean;
  mps2_puts("ddg: variance of 20000 draws at s2 = 1024: ");
  mps2_put_f32(static_cast<float>(var), 6);
  mps2_puts("\n");
  FW_CHECK(var > 1024 * 0.95 && var < 1024 * 1.05);
  FW_CHECK(mean > -5 * 32.0 / 141.4 && mean < 5 * 32.0 / 141.4);  // 5 standard errors sqrt(s2 / 20000)
  return fw_result("ddg_test");
}
