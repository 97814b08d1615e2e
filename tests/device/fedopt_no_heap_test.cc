// Device-code discipline of the optimisation family: FedAvg / Scaffold /
// FedProx / FedProx-exact clients and servers, the least-squares, logistic
// and softmax oracles and the Fed-RR averager, built with -fno-exceptions -fno-rtti, float
// and double, with no heap allocation after create(). Plain main() (no gtest).

#include <cstdio>
#include <cstdlib>

#include "fedrt/algorithms/fedopt.h"
#include "fedrt/algorithms/richardson_romberg.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/problems/logistic.h"
#include "fedrt/problems/softmax.h"

#if defined(__cpp_exceptions) || defined(__GXX_RTTI)
#error "device code must build with -fno-exceptions -fno-rtti"
#endif

#include "alloc_counter.h"

using namespace fedrt;
using algorithms::FedOptAlgorithm;

namespace {

int failures = 0;
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what);
    ++failures;
  }
}

constexpr int kDim = 4, kSamples = 6;

template <class S>
void RunScenario(const char* name) {
  S x[kSamples * kDim], y_lsq[kSamples], y_log[kSamples], a_soft[kSamples], y_cls[kSamples];
  for (int j = 0; j < kSamples; ++j) {
    a_soft[j] = S(j % 3) - S(1);  // softmax: 2 classes x (1 feature + intercept) = kDim
    y_cls[j] = S(j % 2);
    for (int k = 0; k < kDim; ++k) x[j * kDim + k] = S(((j * 5 + k * 3) % 7) - 3) / S(3);
    y_lsq[j] = S(0.1) * S(j) - S(0.2);
    y_log[j] = j % 2 ? S(1) : S(-1);
  }
  StaticArena<16384> arena;
  auto lsq = problems::LeastSquaresOracle<S>::create(arena, kDim, kSamples, x, y_lsq, S(1));
  auto logi = problems::LogisticOracle<S>::create(arena, kDim, kSamples, x, y_log, S(0.1));
  auto soft = problems::SoftmaxOracle<S>::create(arena, 1, 2, true, kSamples, a_soft, y_cls, S(0.1));
  Check(lsq.ok() && logi.ok() && soft.ok() && soft->dim() == kDim, "oracles fit the arena");
  for (FedOptAlgorithm alg : {FedOptAlgorithm::kFedAvg, FedOptAlgorithm::kScaffold, FedOptAlgorithm::kFedProx,
                              FedOptAlgorithm::kFedProxExact}) {
    for (uint32_t batch : {0u, 2u}) {
      algorithms::FedOptHyper<S> hyper;
      hyper.algorithm = alg;
      hyper.step_size = S(0.1);
      hyper.local_steps = 20;
      hyper.batch = batch;
      const size_t mark = arena.mark();
      const S x0[kDim] = {0, 0, 0, 0};
      auto client = algorithms::FedOptClient<S>::create(arena, kDim, hyper);
      auto server = algorithms::FedOptServer<S>::create(arena, kDim, hyper, x0, 1);
      auto rr = algorithms::RichardsonRomberg<S>::create(arena, kDim, 2);
      Check(client.ok() && server.ok() && rr.ok(), "client, server and averager fit the arena");
      const long before = g_allocations;
      for (uint32_t t = 0; t < 5; ++t) {
        const algorithms::RoundPlan plan = server->start_round(t);
        client->begin_round(server->broadcast(), plan);
        CounterRng rng(1, 0, 0, t, RngStream::kLocalSteps);
        if (alg == FedOptAlgorithm::kFedProxExact || t % 2 == 0) client->run_local_steps(*lsq, rng);
        else if (t % 4 == 1) client->run_local_steps(*logi, rng);
        else client->run_local_steps(*soft, rng);
        server->accumulate(client->update());
        server->finish_round();
        rr->observe(t + 1, server->global(), server->global());
      }
      const long used = g_allocations - before;
      if (used != 0) std::fprintf(stderr, "%s %s: %ld heap allocations\n", name, FedOptAlgorithmName(alg), used);
      Check(used == 0, "no heap allocation during rounds");
      bool finite = true;
      for (int i = 0; i < kDim; ++i) finite = finite && (rr->output()[i] == rr->output()[i]);
      Check(finite, "iterates stay finite");
      arena.release_to(mark);
    }
  }
  std::printf("%s: arena high-water %zu bytes\n", name, arena.high_water());
}

}  // namespace

int main() {
  RunScenario<double>("double");
  RunScenario<float>("float");
  std::printf("%s\n", failures == 0 ? "passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
