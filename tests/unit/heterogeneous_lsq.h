#pragma once
// The heterogeneous least-squares setting of examples/fedavg-fedprox-lsq,
// shared by the FedAvg / FedProx tests (fedopt_test.cc,
// fedopt_compression_test.cc).
#include <cstdint>

#include "fedrt/config/experiment.h"

namespace fedrt {

// 10 agents, d = 5, 50 samples each with covariate, concept and quantity
// shift; eta = 0.02 (eta L_max = 1.05 < 2, L_max = 52.6 for this seed), H = 10.
inline config::ExperimentConfig HeterogeneousLsqSetting(uint32_t rounds) {
  config::ExperimentConfig c;
  c.problem = task::ProblemKind::kLeastSquares;
  c.garnet.agents = 10;
  c.garnet.dim = 5;
  c.opt.samples = 50;
  c.opt.covariate_shift = 0.5;
  c.opt.concept_shift = 1.0;
  c.opt.quantity_skew = 0.5;
  c.opt.noise = 0.5;
  c.opt.prox_mu = 2.0;
  c.problem_seed = 3;
  c.step = 0.02;
  c.local_steps = 10;
  c.rounds = rounds;
  c.plot = false;
  c.threads = 1;
  return c;
}

}  // namespace fedrt
