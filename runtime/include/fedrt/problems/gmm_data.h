#pragma once
// Gaussian-mixture data of a federated EM problem (docs/algorithms.md 1.5),
// host side: agent c draws m points, a component z with weight own_weight on
// c mod G (the rest spread evenly) and y = mu_z + N(0, I); the true means lie
// on a circle of diameter `separation` in the first two coordinates (on a
// line when p = 1). Every draw comes from CounterRng(seed, 0, c, 0, kProblem).

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/fed_data.h"

namespace fedrt::problems {

struct GmmData {
  int G = 2, p = 2, dim = 6;  // dim = G (1 + p), the statistic's length
  uint32_t n = 0, m = 0;      // agents, points per agent (generated; 0 when the counts differ)
  std::vector<uint32_t> counts;             // [agent] n_c, its points
  std::vector<std::vector<double>> points;  // [agent][n_c * p], row-major
  Eigen::VectorXd true_params;  // (weights of the pooled draws, true means); empty for shards
  std::string source;           // the shards' pattern (empty: generated)
  uint64_t total_points() const;
};

Result<GmmData> GenerateGmm(const task::ProblemSpec& spec);

// The runs' start: uniform weights, means halfway between the true ones and
// (0.5, ..., 0.5); returns Shat_0 = (pi_g, pi_g mu_g) so that T(Shat_0) = theta_0.
std::vector<double> GmmInitialStatistic(const GmmData& data);

// Gaussian mixtures on the agents' own shards (gmm_shards.cc, docs/data.md).
// Every agent's shard, no label (every CSV column is a feature), G components.
Result<GmmData> LoadGmmShards(const ShardFiles& files, int components);
// k-means++ seeding over the pooled points (agent 0's rows first, then agent
// 1's, ...): mu_1 a uniform point, mu_g a point drawn with probability
// D(y)^2 / sum D^2 (D: distance to the nearest chosen mean); every draw from
// CounterRng(seed, 0, kGmmSeedingAgent, 0, kProblem). Returns G p means.
constexpr uint64_t kGmmSeedingAgent = 0xFFFFFFFFull;
std::vector<double> GmmKMeansPlusPlus(const GmmData& data, uint64_t seed);
// Shat_0 = (pi_g, pi_g mu_g) with pi_g = 1/G for the G p `means` (component-major).
std::vector<double> GmmStatisticOfMeans(int G, int p, const std::vector<double>& means);

}  // namespace fedrt::problems
