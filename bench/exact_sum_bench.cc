// fedrt-sum-bench: the coordinator's exact sums at d = 10^6 with 10 addends
// per coordinate (10 updates), ExactSum per coordinate (544 bytes each) vs
// ExactSumArray (about 30 bytes each). add: one round's additions, clear()
// included, per addition; value: reading every coordinate once, per coordinate.
// Google Benchmark; run with --benchmark_min_time=... for steadier numbers.

#include <cmath>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include "fedrt/core/exact_sum.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/rng.h"

namespace {

constexpr size_t kDim = 1000000;
constexpr int kUpdates = 10;

// 10 update vectors, values spread over a few orders of magnitude, mixed signs.
const std::vector<double>& Updates() {
  static const std::vector<double> u = [] {
    std::vector<double> v(kDim * kUpdates);
    fedrt::CounterRng rng(7);
    for (double& x : v) x = (rng.uniform() - 0.5) * std::ldexp(1.0, static_cast<int>(rng.below(20)) - 10);
    return v;
  }();
  return u;
}

struct Array {
  Array() : mem(fedrt::ExactSumArray::ArenaBytes(kDim)) {
    fedrt::Arena arena(mem.data(), mem.size());
    a = *fedrt::ExactSumArray::create(arena, kDim);
  }
  std::vector<uint8_t> mem;
  fedrt::ExactSumArray a;
};

void Fill(std::vector<fedrt::ExactSum>& s) {
  const double* u = Updates().data();
  for (auto& e : s) e.clear();
  for (int c = 0; c < kUpdates; ++c)
    for (size_t i = 0; i < kDim; ++i) s[i].add(u[c * kDim + i]);
}
void Fill(fedrt::ExactSumArray& a) {
  const double* u = Updates().data();
  a.clear();
  for (int c = 0; c < kUpdates; ++c)
    for (size_t i = 0; i < kDim; ++i) a.add(i, u[c * kDim + i]);
}

void BM_ExactSum_Add(benchmark::State& state) {
  std::vector<fedrt::ExactSum> s(kDim);
  Updates();
  for (auto _ : state) {
    Fill(s);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kDim * kUpdates);
}
void BM_ExactSumArray_Add(benchmark::State& state) {
  Array s;
  Updates();
  for (auto _ : state) {
    Fill(s.a);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kDim * kUpdates);
}
void BM_ExactSum_Value(benchmark::State& state) {
  std::vector<fedrt::ExactSum> s(kDim);
  Fill(s);
  for (auto _ : state) {
    double acc = 0;
    for (size_t i = 0; i < kDim; ++i) acc += s[i].value();
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations() * kDim);
}
void BM_ExactSumArray_Value(benchmark::State& state) {
  Array s;
  Fill(s.a);
  for (auto _ : state) {
    double acc = 0;
    for (size_t i = 0; i < kDim; ++i) acc += s.a.value(i);
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations() * kDim);
}

BENCHMARK(BM_ExactSum_Add)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactSumArray_Add)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactSum_Value)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactSumArray_Value)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
