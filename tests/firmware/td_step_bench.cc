// fedrt-td-step-bench: instructions per local TD(0) step (d = 8) of the real
// client core (LsaClient<float>::run_local_steps, SCAFFLSA, TdOracle<float>)
// on a Garnet-like problem (32 states, 4 successors each).
//
// Run under QEMU with -icount shift=0 (qemu-run.sh --icount): the virtual
// clock then advances 1 ns per executed instruction, so the 25 MHz SysTick
// counts one tick per 40 instructions. The bench calibrates that ratio with a
// loop of known length, times a block of N steps and an empty block (H = 0),
// and reports (ticks(N) - ticks(0)) * instructions_per_tick / N.
// Exit code 1 if the cost exceeds FEDRT_TD_STEP_BUDGET (budget.json), when set.

#include "fedrt/algorithms/lsa.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/td_oracle.h"
#include "mps2.h"

namespace {

constexpr int kDim = 8, kStates = 32, kSucc = 4;
// The unrolled d = 8 kernel, or (FEDRT_TD_STEP_DYNAMIC) the Eigen::Dynamic one
// that fedrt-fw-lsa runs for every d but 8 (FEDRT_UNROLLED_DIM,
// runtime/include/fedrt/core/types.h).
#if defined(FEDRT_TD_STEP_DYNAMIC)
constexpr int kKernelDim = Eigen::Dynamic;
constexpr const char* kReportKey = "td_step_instructions_dynamic";
#else
constexpr int kKernelDim = kDim;
constexpr const char* kReportKey = "td_step_instructions";
#endif
constexpr uint32_t kSteps = 20000;
constexpr uint32_t kCalibIters = 1000000;

// 2 instructions per iteration (subs + taken bne) plus a few around the loop.
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

fedrt::StaticArena<12288> g_arena;

}  // namespace

int main() {
  using namespace fedrt;
  // A Garnet-like TD problem: features and rewards in [0, 1), each state has
  // kSucc random successors with random weights, uniform state weights.
  static double phi[kStates * kDim], reward[kStates], joint[kStates * kStates];
  CounterRng gen(7, 0, 0, 0, RngStream::kProblem);
  for (int i = 0; i < kStates * kDim; ++i) phi[i] = gen.uniform();
  for (int s = 0; s < kStates; ++s) reward[s] = gen.uniform();
  for (int s = 0; s < kStates; ++s)
    for (int k = 0; k < kSucc; ++k) joint[s * kStates + gen.below(kStates)] += 0.1 + gen.uniform();
  auto oracle = problems::TdOracle<float>::create(g_arena, kDim, kStates, 0.95, phi, reward, joint);
  algorithms::LsaHyper<float> hyper;
  hyper.algorithm = algorithms::LsaAlgorithm::kScaffLsa;
  hyper.step_size = 0.01f;
  hyper.local_steps = kSteps;
  auto client = algorithms::LsaClient<float>::create(g_arena, kDim, hyper);
  if (!oracle.ok() || !client.ok()) {
    mps2_puts("td_step_bench: problem does not fit the arena\n");
    return 2;
  }
  const float theta0[kDim] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < kDim; ++i) client->mutable_control_variate()[i] = 0.01f * static_cast<float>(i);

  const uint64_t calib = Ticks([] { CalibrationLoop(kCalibIters); });
  // Instructions per tick, x1000 (40000 under -icount shift=0 at 25 MHz).
  const uint64_t ipt_milli = calib ? (2ull * kCalibIters * 1000ull + calib / 2) / calib : 0;

  auto block = [&](uint32_t steps) {
    algorithms::RoundPlan plan;
    plan.round = 1;
    plan.local_steps = steps;
    CounterRng rng(99, 0, 3, 1, RngStream::kLocalSteps);
    return Ticks([&] {
      client->begin_round(theta0, plan);
      client->run_local_steps<kKernelDim>(*oracle, rng);
    });
  };
  const uint64_t t0 = block(0);
  const uint64_t tn = block(kSteps);
  const uint64_t insns_milli = (tn - t0) * ipt_milli;           // instructions x 1000 for kSteps steps
  const uint64_t per_step_x10 = (insns_milli / kSteps + 50) / 100;  // instructions per step x 10

  float checksum = 0;
  for (int i = 0; i < kDim; ++i) checksum += client->update()[i];
  mps2_puts("td_step_bench: d=8 steps=");
  mps2_put_u32(kSteps);
  mps2_puts(" ticks=");
  mps2_put_u64(tn - t0);
  mps2_puts(" instructions/tick=");
  mps2_put_f32(static_cast<float>(ipt_milli) / 1000.0f, 3);
  mps2_puts(" theta_sum=");
  mps2_put_f32(checksum, 5);
  mps2_puts("\n");
  mps2_puts("td_step_bench: instructions per local TD(0) step = ");
  mps2_put_u64(per_step_x10 / 10);
  mps2_puts(".");
  mps2_put_u32(static_cast<uint32_t>(per_step_x10 % 10));
  mps2_puts("\n");
  mps2_report_u32(kReportKey, static_cast<uint32_t>((per_step_x10 + 5) / 10));
  if (ipt_milli < 39600 || ipt_milli > 40400) {
    mps2_puts("td_step_bench: clock is not instruction-driven (run with qemu-run.sh --icount)\n");
    return 3;
  }
  if (!(checksum == checksum)) return 4;
#if defined(FEDRT_TD_STEP_BUDGET)
  if (per_step_x10 > 10u * FEDRT_TD_STEP_BUDGET) {
    mps2_puts("td_step_bench: over budget of ");
    mps2_put_u32(FEDRT_TD_STEP_BUDGET);
    mps2_puts(" instructions per step\n");
    return 1;
  }
#endif
  return 0;
}
