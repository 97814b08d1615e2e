#include "fedrt/sim/td_lanes.h"

#include "fedrt/algorithms/lsa.h"
#include "fedrt/core/types.h"
#include "td_lanes_kernel.h"

namespace fedrt::sim {

#if defined(FEDRT_TD_LANES_AVX2)
bool TdLanesAvx2(problems::TdBlock<double>* const* blocks, int groups);  // td_lanes_avx2.cc
#endif

namespace {

bool CpuHasAvx2() {
#if defined(FEDRT_TD_LANES_AVX2)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// Blocks that can share lanes: same dimension, step count and algorithm.
bool SameShape(const problems::TdBlock<double>& a, const problems::TdBlock<double>& b) {
  return a.oracle->dim() == b.oracle->dim() && a.steps == b.steps && (a.eta_xi == nullptr) == (b.eta_xi == nullptr);
}

// One block through the scalar kernel: LsaClient's local steps themselves.
void ScalarBlock(problems::TdBlock<double>& b) {
  const int dim = b.oracle->dim();
  DispatchDim(dim, [&](auto tag) {
    constexpr int D = decltype(tag)::value;
    CounterRng rng(b.key);
    algorithms::LsaClient<double>::LocalSteps<D>(*b.oracle, b.theta, b.eta_xi, b.eta, b.steps, dim, rng);
  });
}

bool Lanes(config::TdKernel k, problems::TdBlock<double>* const* blocks, int groups) {
#if defined(FEDRT_TD_LANES_AVX2)
  if (k == config::TdKernel::kAvx2) return TdLanesAvx2(blocks, groups);
#endif
  return LanesFor(blocks, groups);
}

}  // namespace

config::TdKernel ResolveTdKernel(config::TdKernel k) {
  if (k == config::TdKernel::kAuto) return CpuHasAvx2() ? config::TdKernel::kAvx2 : config::TdKernel::kPortable;
  if (k == config::TdKernel::kAvx2 && !CpuHasAvx2()) return config::TdKernel::kPortable;
  return k;
}

void RunTdBlocks(problems::TdBlock<double>* blocks, size_t n, config::TdKernel kernel) {
  kernel = ResolveTdKernel(kernel);
  problems::TdBlock<double>* group[kTdLaneGroup];
  size_t i = 0;
  while (i < n) {
    size_t end = i + 1;
    while (end < n && SameShape(blocks[i], blocks[end])) ++end;
    if (kernel != config::TdKernel::kScalar) {
      for (int groups : {2, 1}) {
        const size_t m = 4 * static_cast<size_t>(groups);
        while (end - i >= m && m <= kTdLaneGroup) {
          for (size_t x = 0; x < m; ++x) group[x] = &blocks[i + x];
          if (!Lanes(kernel, group, groups)) break;
          i += m;
        }
      }
    }
    for (; i < end; ++i) ScalarBlock(blocks[i]);
  }
}

}  // namespace fedrt::sim
