// Device-code discipline: compiled with -fno-exceptions -fno-rtti, and no heap
// allocation during local steps (malloc is counted, Eigen's runtime check is on).
// Plain main(): GoogleTest itself needs exceptions and the heap.

#include <cstdio>
#include <cstdlib>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/td_oracle.h"

#if defined(__cpp_exceptions) || defined(__GXX_RTTI)
#error "device code must build with -fno-exceptions -fno-rtti"
#endif

#include "alloc_counter.h"

using namespace fedrt;

namespace {

int failures = 0;
bool g_inject_allocation = false;  // --self-check: prove the counter sees a heap allocation
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what);
    ++failures;
  }
}

// A 4-state TD problem with d = 8 written out by hand (no host generator).
constexpr int kStates = 4, kDim = 8;
double phi[kStates * kDim];
const double reward[kStates] = {0.3, -0.2, 0.7, 0.1};
const double joint[kStates * kStates] = {0.05, 0.20, 0, 0, 0, 0.1, 0.15, 0, 0.1, 0, 0, 0.15, 0.25, 0, 0, 0};
double abar[kDim * kDim], bbar[kDim];

template <class S, int D>
void RunScenario(const char* name) {
  StaticArena<32768> arena;
  auto td = problems::TdOracle<S>::create(arena, kDim, kStates, 0.95, phi, reward, joint);
  auto ex = problems::ExpectedLsaOracle<S>::create(arena, kDim, abar, bbar);
  Check(td.ok() && ex.ok(), "oracles fit the arena");
  for (algorithms::LsaAlgorithm alg : {algorithms::LsaAlgorithm::kFedLsa, algorithms::LsaAlgorithm::kScaffLsa,
                                       algorithms::LsaAlgorithm::kScaffLsaProb}) {
    algorithms::LsaHyper<S> hyper;
    hyper.algorithm = alg;
    hyper.step_size = S(0.05);
    hyper.local_steps = 500;
    hyper.comm_prob = 0.01;
    const S theta0[kDim] = {1, 1, 1, 1, 1, 1, 1, 1};
    auto client = algorithms::LsaClient<S>::create(arena, kDim, hyper);
    auto server = algorithms::LsaServer<S>::create(arena, kDim, hyper, theta0, 1, 0);
    Check(client.ok() && server.ok(), "client and server fit the arena");
    const long before = g_allocations;
    for (uint32_t t = 0; t < 5; ++t) {
      const algorithms::RoundPlan plan = server->start_round(t);
      client->begin_round(server->global(), plan);
      CounterRng rng(1, 0, 0, t, RngStream::kLocalSteps);
      client->template run_local_steps<D>(*td, rng);
      client->template run_local_steps<D>(*ex, rng);
      server->accumulate(client->update());
      server->finish_round();
      client->apply_global(server->global());
      if (g_inject_allocation) {
        void* volatile p = std::malloc(16);  // volatile: the compiler may not elide the pair
        std::free(p);
      }
    }
    const long used = g_allocations - before;
    if (used != 0) std::fprintf(stderr, "%s %s: %ld heap allocations\n", name, LsaAlgorithmName(alg), used);
    Check(used == 0, "no heap allocation during rounds");
    bool finite = true;
    for (int i = 0; i < kDim; ++i) finite = finite && (server->global()[i] == server->global()[i]);
    Check(finite, "iterates stay finite");
  }
  std::printf("%s: arena high-water %zu bytes\n", name, arena.high_water());
}

}  // namespace

int main(int argc, char** argv) {
  g_inject_allocation = argc > 1 && argv[1][0] == '-';
  for (int s = 0; s < kStates; ++s) {
    double sum = 0;
    for (int i = 0; i < kDim; ++i) sum += (phi[s * kDim + i] = 1.0 + ((s * 7 + i * 3) % 5));
    for (int i = 0; i < kDim; ++i) phi[s * kDim + i] /= sum;
  }
  for (int i = 0; i < kDim; ++i) {
    abar[i * kDim + i] = 0.5 + 0.1 * i;
    bbar[i] = 0.1 * i;
  }
#if defined(EIGEN_RUNTIME_NO_MALLOC)
  Eigen::internal::set_is_malloc_allowed(false);
#endif
  RunScenario<double, 8>("double, d=8 fixed");
  RunScenario<double, Eigen::Dynamic>("double, d dynamic");
  RunScenario<float, 8>("float, d=8 fixed");
  RunScenario<float, Eigen::Dynamic>("float, d dynamic");
  std::printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
