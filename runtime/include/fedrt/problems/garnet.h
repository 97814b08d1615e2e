#pragma once
// Garnet MDPs (Archibald et al. 1995; the SCAFFLSA paper's benchmark) for
// federated TD(0), in the two heterogeneity regimes of docs/algorithms.md 1.3.

#include <cstdint>

#include "fedrt/core/status.h"
#include "fedrt/problems/td_problem.h"

namespace fedrt::problems {

enum class Heterogeneity { kLow, kHigh };

struct GarnetConfig {
  int agents = 100;        // N
  int n_states = 30;
  int n_actions = 2;
  int branching = 2;       // b successors per (s, a)
  int dim = 8;             // feature dimension d
  double gamma = 0.95;
  double epsilon = 0.02;   // low regime: U[0, epsilon) perturbation of kernels and rewards
  Heterogeneity heterogeneity = Heterogeneity::kLow;
  uint64_t seed = 1;
};

// Generates the instance deterministically from config.seed:
// low: one base kernel, per agent U[0,eps) on its non-zero entries (row-normalised), r_c = r0 + U[0,eps);
// high: two base kernels K0 (even agents) and K1 (odd agents), U[0,0.02) on non-zero entries, r_c = +-r0.
Result<TdProblem> GenerateGarnet(const GarnetConfig& config);

}  // namespace fedrt::problems
