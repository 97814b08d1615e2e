// fedrt-fw-ddg-bench: instructions per coordinate of a device's distributed
// DP encoding (docs/privacy-distributed.md, "On the fleet"): the rotation
// z = H D (x, 0) / sqrt(d_pad), the conditional rounding of z / gamma and
// one exact discrete Gaussian draw N_Z(0, s2) per coordinate, with the
// uniforms from the device's ChaCha20 keystream (protocol/noise_bits.h), as
// ClientSession runs them. Each part is timed alone too.
//
// Run under QEMU with -icount shift=0 (qemu-run.sh --icount): 40
// instructions per 25 MHz SysTick tick, calibrated as in td_step_bench.cc.

#include "fedrt/privacy/ddg_codec.h"
#include "fedrt/protocol/noise_bits.h"
#include "mps2.h"

namespace {

constexpr uint32_t kDim = 500, kPad = 512;  // d, and d_pad (the next power of two)
constexpr uint32_t kCalibIters = 1000000;

__attribute__((noinline)) void CalibrationLoop(uint32_t n) {
  __asm volatile(
      "1: subs %0, %0, #1\n"
      "   bne 1b\n"
      : "+r"(n)::"cc");
}

template <class F>
uint64_t Ticks(F&& f) {
  const uint64_t t0 = mps2_ticks();
  f();
  return mps2_ticks() - t0;
}

// The device's entropy stands in for its TLS generator: the cost is the keystream's, not the key's.
int FixedEntropy(void*, uint64_t, uint32_t, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(37 * i + 11);
  return 0;
}

float g_x[kDim];
double g_work[kPad];
uint32_t g_out[kPad];

void Report(const char* what, uint64_t ticks, uint64_t ipt_milli) {
  const uint64_t per_x10 = (ticks * ipt_milli / kPad + 50) / 100;  // instructions per coordinate x 10
  mps2_puts("ddg_bench: ");
  mps2_puts(what);
  mps2_puts(" = ");
  mps2_put_u64(per_x10 / 10);
  mps2_puts(".");
  mps2_put_u32(static_cast<uint32_t>(per_x10 % 10));
  mps2_puts(" instructions per coordinate\n");
}

}  // namespace

int main() {
  using namespace fedrt;
  // A clipped update of norm about 1 (clip 1), float as the firmware holds it.
  CounterRng gen(7, 0, 0, 0, RngStream::kProblem);
  for (uint32_t i = 0; i < kDim; ++i) g_x[i] = static_cast<float>((gen.uniform() - 0.5) * 0.15);
  privacy::DdgRound round;  // sigma 1, clip 1, quorum 0.8 of n = 10, s2 = 2^16, b = 24
  if (privacy::DdgPlan(1.0, 1.0, 800000, 65536, 10, kDim, 24, round) != nullptr || round.d_pad != kPad) {
    mps2_puts("ddg_bench: plan refused\n");
    return 2;
  }
  const uint64_t rot_seed = privacy::DdgRotationSeed(1, 0, 0, 0);
  protocol::NoiseBits bits;
  if (!bits.use_entropy(FixedEntropy, nullptr, 1, 0).ok()) return 2;

  const uint64_t calib = Ticks([] { CalibrationLoop(kCalibIters); });
  const uint64_t ipt_milli = calib ? (2ull * kCalibIters * 1000ull + calib / 2) / calib : 0;

  Status st = Status::Ok();
  const uint64_t all = Ticks([&] { st = privacy::DdgEncode(g_x, round, rot_seed, bits, g_work, g_out); });
  if (!st.ok() || bits.failed()) {
    mps2_puts("ddg_bench: encoding failed\n");
    return 2;
  }
  const uint64_t rot = Ticks([&] { privacy::Rotate(g_x, round.d, round.d_pad, rot_seed, g_work); });
  for (uint32_t i = 0; i < kPad; ++i) g_work[i] /= round.gamma;
  int32_t* rounded = reinterpret_cast<int32_t*>(g_out);
  const uint64_t rnd = Ticks([&] { st = privacy::ConditionalRound(g_work, kPad, round.bound_sq, bits, rounded); });
  int64_t sum = 0;
  const uint64_t gauss = Ticks([&] {
    for (uint32_t i = 0; i < kPad; ++i) sum += privacy::DiscreteGaussian(bits, round.s2);
  });
  mps2_puts("ddg_bench: d=500 d_pad=512 s2=65536 instructions/tick=");
  mps2_put_f32(static_cast<float>(ipt_milli) / 1000.0f, 3);
  mps2_puts(" noise_sum=");
  mps2_put_i32(static_cast<int32_t>(sum));
  mps2_puts("\n");
  Report("encoding (rotation + rounding + discrete Gaussian)", all, ipt_milli);
  Report("rotation", rot, ipt_milli);
  Report("conditional rounding", rnd, ipt_milli);
  Report("discrete Gaussian draw", gauss, ipt_milli);
  mps2_report_u32("ddg_encode_instructions_per_coordinate",
                  static_cast<uint32_t>((all * ipt_milli / kPad + 500) / 1000));
  if (ipt_milli < 39600 || ipt_milli > 40400) {
    mps2_puts("ddg_bench: clock is not instruction-driven (run with qemu-run.sh --icount)\n");
    return 3;
  }
  return st.ok() ? 0 : 4;
}
