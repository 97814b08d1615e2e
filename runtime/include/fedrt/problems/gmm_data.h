#pragma once
// Gaussian-mixture data of a federated EM problem (docs/algorithms.md 1.5),
// host side: agent c draws m points, a component z with weight own_weight on
// c mod G (the rest spread evenly) and y = mu_z + N(0, I); the true means lie
// on a circle of diameter `separation` in the first two coordinates (on a
// line when p = 1). Every draw comes from CounterRng(seed, 0, c, 0, kProblem).

#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/config/task.h"
#include "fedrt/core/status.h"

namespace fedrt::problems {

struct GmmData {
  int G = 2, p = 2, dim = 6;  // dim = G (1 + p), the statistic's length
  uint32_t n = 0, m = 0;      // agents, points per agent
  std::vector<std::vector<double>> points;  // [agent][m * p], row-major
  Eigen::VectorXd true_params;  // (weights of the pooled draws, true means)
};

Result<GmmData> GenerateGmm(const config::ProblemSpec& spec);

// The runs' start: uniform weights, means halfway between the true ones and
// (0.5, ..., 0.5); returns Shat_0 = (pi_g, pi_g mu_g) so that T(Shat_0) = theta_0.
std::vector<double> GmmInitialStatistic(const GmmData& data);

}  // namespace fedrt::problems
