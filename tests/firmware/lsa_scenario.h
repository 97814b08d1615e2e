#pragma once
// A small federated TD(0) problem (2 agents, 4 states, d = 8), written out by
// hand, and the round loop the firmware tests run in float. The same code run
// on the host in double (gen_expected.cc) produced the expected iterates that
// lsa_test.cc embeds.

#include <stdint.h>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/td_oracle.h"

namespace fwtest {

constexpr int kStates = 4, kDim = 8, kAgents = 2, kRounds = 6;
constexpr uint32_t kLocalSteps = 25;
constexpr double kGamma = 0.9;
constexpr uint64_t kSeed = 20261121;

inline void Features(double* phi) {  // phi(s), rows normalised to sum 1
  for (int s = 0; s < kStates; ++s) {
    double sum = 0;
    for (int i = 0; i < kDim; ++i) sum += (phi[s * kDim + i] = 1.0 + ((s * 7 + i * 3) % 5));
    for (int i = 0; i < kDim; ++i) phi[s * kDim + i] /= sum;
  }
}
// Heterogeneous agents: their own rewards and joint laws of (s, s').
constexpr double kReward[kAgents][kStates] = {{0.3, -0.2, 0.7, 0.1}, {-0.4, 0.5, 0.2, 0.9}};
constexpr double kJoint[kAgents][kStates * kStates] = {
    {0.05, 0.20, 0, 0, 0, 0.1, 0.15, 0, 0.1, 0, 0, 0.15, 0.25, 0, 0, 0},
    {0.10, 0, 0.15, 0, 0.05, 0.05, 0, 0.15, 0, 0.2, 0.05, 0, 0, 0, 0.1, 0.15}};

struct Outcome {
  float theta[kDim];           // theta_T (cast to float)
  float xi_sum_max_abs;        // max_i |sum_c xi_c,i| over rounds (0 in exact arithmetic)
  bool ok;                     // everything fitted and stayed finite
};

// Runs kRounds rounds of `alg` with full participation and no compression.
template <class S>
Outcome Run(fedrt::algorithms::LsaAlgorithm alg) {
  using namespace fedrt;
  Outcome out{};
  static StaticArena<8192> arena;
  arena.release_to(0);
  double phi[kStates * kDim];
  Features(phi);
  problems::TdOracle<S> oracle[kAgents];
  algorithms::LsaClient<S> client[kAgents];
  algorithms::LsaHyper<S> hyper;
  hyper.algorithm = alg;
  hyper.step_size = S(0.5);
  hyper.local_steps = kLocalSteps;
  S theta0[kDim];
  for (int i = 0; i < kDim; ++i) theta0[i] = S(0);
  auto server = algorithms::LsaServer<S>::create(arena, kDim, hyper, theta0, kSeed, 0);
  if (!server.ok()) return out;
  for (int c = 0; c < kAgents; ++c) {
    auto o = problems::TdOracle<S>::create(arena, kDim, kStates, kGamma, phi, kReward[c], kJoint[c]);
    auto cl = algorithms::LsaClient<S>::create(arena, kDim, hyper);
    if (!o.ok() || !cl.ok()) return out;
    oracle[c] = *o;
    client[c] = *cl;
  }
  float xi_max = 0;
  for (uint32_t t = 0; t < kRounds; ++t) {
    const algorithms::RoundPlan plan = server->start_round(t);
    for (int c = 0; c < kAgents; ++c) {
      client[c].begin_round(server->global(), plan);
      CounterRng rng(kSeed, 0, static_cast<uint64_t>(c), t, RngStream::kLocalSteps);
      client[c].template run_local_steps<kDim>(oracle[c], rng);
      server->accumulate(client[c].update());
    }
    server->finish_round();
    for (int c = 0; c < kAgents; ++c) client[c].apply_global(server->global());
    for (int i = 0; i < kDim; ++i) {
      S sum = 0;
      for (int c = 0; c < kAgents; ++c) sum += client[c].control_variate()[i];
      const float a = static_cast<float>(sum < 0 ? -sum : sum);
      if (a > xi_max || a != a) xi_max = a;
    }
  }
  bool finite = true;
  for (int i = 0; i < kDim; ++i) {
    out.theta[i] = static_cast<float>(server->global()[i]);
    finite = finite && out.theta[i] == out.theta[i];
  }
  out.xi_sum_max_abs = xi_max;
  out.ok = finite;
  return out;
}

}  // namespace fwtest
