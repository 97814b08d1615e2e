// fedrt-roofline-bench: where the TD(0) local step stands against this
// machine's limits (docs/architecture.md, "Lane kernels"). For d = 8, 32 and
// 128 it counts per agent-step the flops, the bytes the step must read and
// the random draws; measures in the same run the core's peak rate for each
// (independent vector multiplies and adds at the kernel's width, L1 loads,
// SplitMix64 draws); and prints the fraction every kernel reaches on one core.
// A benchmark printout, not a test.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench_table.h"
#include "fedrt/cli/parse.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/sim/td_lanes.h"

namespace {

using Clock = std::chrono::steady_clock;
using fedrt::config::TdKernel;
typedef double V4 __attribute__((vector_size(32)));

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Peak multiply + add rate: 8 independent chains of x <- x * m + a (a multiply
// and an add per lane, never fused), for a vector type V of kLanes doubles.
// Baseline: 2-lane vectors (SSE2, NEON); AVX2: 4 lanes, the AVX2 kernel's width.
typedef double V2 __attribute__((vector_size(16)));
template <class V, int kLanes>
[[gnu::always_inline]] inline double PeakFlopsLoop(long iters) {
  V x[8], m, a;
  for (int l = 0; l < kLanes; ++l) {
    m[l] = 0.999999;
    a[l] = 1e-6;
    for (int i = 0; i < 8; ++i) x[i][l] = 1.0 + i;
  }
  const auto t0 = Clock::now();
  for (long k = 0; k < iters; ++k)
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) x[i] = x[i] * m + a;
  const double s = Seconds(t0);
  double sink = 0;
  for (int i = 0; i < 8; ++i) sink += x[i][0] + x[i][kLanes - 1];
  if (sink == 42.0) std::puts("");
  return 8.0 * kLanes * 2 * static_cast<double>(iters) / s;
}
double PeakFlopsBaseline(long iters) { return PeakFlopsLoop<V2, 2>(iters); }
__attribute__((target("avx2"))) double PeakFlopsAvx2(long iters) { return PeakFlopsLoop<V4, 4>(iters); }

// Peak L1 read rate: 16 KB summed again and again in 4-lane loads.
__attribute__((target("avx2"))) double PeakL1Bytes(long passes) {
  std::vector<double> buf(2048, 1.0);
  V4 acc[4] = {};
  const auto t0 = Clock::now();
  for (long p = 0; p < passes; ++p)
    for (size_t i = 0; i < buf.size(); i += 16)
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        V4 v;
        std::memcpy(&v, buf.data() + i + 4 * k, sizeof v);
        acc[k] += v;
      }
  const double s = Seconds(t0);
  if (acc[0][0] + acc[3][3] == 42.0) std::puts("");
  return 8.0 * static_cast<double>(buf.size()) * static_cast<double>(passes) / s;
}

// Peak draw rate: 8 independent SplitMix64 counters (CounterRng::next_u64).
double PeakDraws(long iters) {
  uint64_t st[8], acc = 0;
  for (int i = 0; i < 8; ++i) st[i] = 0x1234567ull * (i + 1);
  const auto t0 = Clock::now();
  for (long k = 0; k < iters; ++k)
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      st[i] += fedrt::CounterRng::kGolden;
      acc ^= fedrt::Mix64(st[i]);
    }
  const double s = Seconds(t0);
  if (acc == 42) std::puts("");
  return 8.0 * static_cast<double>(iters) / s;
}

// 64 agents' TD(0) oracles shaped like Fig. 1's Garnet (30 states, 2 next
// states per state on average) at dimension d.
struct Fleet {
  std::vector<uint8_t> memory;
  std::vector<fedrt::problems::TdOracle<double>> oracles;
};
Fleet MakeFleet(int d) {
  constexpr int kAgents = 64, kStates = 30;
  Fleet f;
  f.memory.assign(static_cast<size_t>(kAgents) * (kStates * d * 8 + kStates * kStates * 40 + 4096), 0);
  fedrt::Arena arena(f.memory.data(), f.memory.size());
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int c = 0; c < kAgents; ++c) {
    std::vector<double> phi(kStates * d), reward(kStates), joint(kStates * kStates, 0.0);
    for (double& v : phi) v = u(gen) / std::sqrt(static_cast<double>(d));
    for (double& v : reward) v = u(gen);
    for (int s = 0; s < kStates; ++s)
      for (int b = 0; b < 2; ++b) joint[s * kStates + static_cast<int>(u(gen) * kStates)] += u(gen);
    auto o = fedrt::problems::TdOracle<double>::create(arena, d, kStates, 0.95, phi.data(), reward.data(), joint.data());
    if (!o.ok()) {
      std::fprintf(stderr, "fedrt-roofline-bench: %s\n", o.status().message());
      std::exit(1);
    }
    f.oracles.push_back(*o);
  }
  return f;
}

// Agent-steps per second of `kernel` on one core: 64 agents, blocks of H steps, best of 3.
double StepsPerSecond(const Fleet& f, int d, TdKernel kernel, bool control_variate, uint32_t H) {
  const size_t n = f.oracles.size();
  std::vector<double> theta(n * d, 0.0), eta_xi(n * d, 1e-4);
  std::vector<fedrt::problems::TdBlock<double>> blocks(n);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    for (size_t c = 0; c < n; ++c)
      blocks[c] = {theta.data() + c * d, control_variate ? eta_xi.data() + c * d : nullptr, &f.oracles[c],
                   fedrt::RngKey(1, 0, c, rep, fedrt::RngStream::kLocalSteps), H, 0.01};
    const auto t0 = Clock::now();
    for (size_t b = 0; b < n; b += fedrt::sim::kTdLaneGroup)
      fedrt::sim::RunTdBlocks(blocks.data() + b, fedrt::sim::kTdLaneGroup, kernel);
    best = std::max(best, static_cast<double>(n) * H / Seconds(t0));
  }
  return best;
}

std::string Pct(double x) { return fmt::format("{:.0f}%", 100.0 * x); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-roofline-bench: the TD(0) local step against the core's measured peaks (a table)",
               "fedrt-roofline-bench"};
  bool quick = false;
  app.add_flag("--quick", quick, "a tenth of the work per measurement (noisier)");
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  const long scale = quick ? 10 : 1;
  const bool avx2 = fedrt::sim::ResolveTdKernel(TdKernel::kAvx2) == TdKernel::kAvx2;
  std::fprintf(stderr, "[bench] measuring the core's peaks\n");
  const double peak_flops_base = PeakFlopsBaseline(100000000 / scale);
  const double peak_flops_avx2 = avx2 ? PeakFlopsAvx2(100000000 / scale) : peak_flops_base;
  const double peak_l1 = avx2 ? PeakL1Bytes(200000 / scale) : 0;
  const double peak_draws = PeakDraws(100000000 / scale);

  fedrt::bench::Title("Roofline of the TD(0) local step (one core)");
  std::printf("peaks measured now: multiply+add %.1f GFLOP/s baseline ISA (2 lanes), %.1f GFLOP/s AVX2 (4 lanes, no FMA);\n"
              "L1 reads %.1f GB/s; SplitMix64 draws %.2e /s\n",
              peak_flops_base / 1e9, peak_flops_avx2 / 1e9, peak_l1 / 1e9, peak_draws);
  std::puts("per agent-step: flops = 6d + 4 (+ d for SCAFFLSA's control variate), bytes = the two feature rows\n"
            "phi(s), phi(s') (16 d) + one alias-table atom (24), draws = 1; theta stays in registers or L1.\n"
            "64 Garnet-shaped agents (30 states), SCAFFLSA, blocks of H steps, best of 3.\n");
  fedrt::bench::Table t({"d", "kernel", "agent-steps/s", "ns/step", "GFLOP/s", "of peak", "GB/s read", "of L1",
                         "draws/s", "of peak"});
  double highest = 0;
  for (int d : {8, 32, 128}) {
    const Fleet f = MakeFleet(d);
    const uint32_t H = static_cast<uint32_t>((d == 8 ? 20000 : d == 32 ? 8000 : 2500) / scale);
    for (TdKernel k : {TdKernel::kScalar, TdKernel::kPortable, TdKernel::kAvx2}) {
      if (k == TdKernel::kAvx2 && !avx2) continue;
      std::fprintf(stderr, "[bench] d=%d kernel=%s\n", d, fedrt::config::TdKernelName(k));
      const double rate = StepsPerSecond(f, d, k, true, H);
      const double flops = rate * (7.0 * d + 4), bytes = rate * (16.0 * d + 24);
      const double peak = k == TdKernel::kAvx2 ? peak_flops_avx2 : peak_flops_base;
      highest = std::max({highest, flops / peak, peak_l1 > 0 ? bytes / peak_l1 : 0.0, rate / peak_draws});
      t.row({std::to_string(d), fedrt::config::TdKernelName(k), fmt::format("{:.3e}", rate),
             fmt::format("{:.2f}", 1e9 / rate), fmt::format("{:.2f}", flops / 1e9), Pct(flops / peak),
             fmt::format("{:.1f}", bytes / 1e9), peak_l1 > 0 ? Pct(bytes / peak_l1) : "-",
             fmt::format("{:.2e}", rate), Pct(rate / peak_draws)});
    }
  }
  t.print();
  std::printf("\nHighest fraction of any peak: %.0f%%. %s\n", 100.0 * highest,
              highest < 0.8 ? "Below every peak: the step is bound by the latency of each agent's dependency chain\n"
                              "(dot products -> TD error -> update -> next draw) and by shuffles, which the lane kernels\n"
                              "overlap across 8 agents (docs/architecture.md, \"Lane kernels\")."
                            : "Near a peak: see the column above 80%.");
  return 0;
}
