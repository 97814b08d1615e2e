#pragma once
// Splitting one data set into per-device shards (docs/data.md, "Splitting"),
// host side: the non-IID Dirichlet split over labels used by the federated
// learning literature, and a uniform (IID) split.

#include <cstdint>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::data {

// For each class k (a distinct label value), proportions p_k ~ Dirichlet(alpha
// 1_N) over the N devices, and class k's examples (shuffled) go to device i in
// proportion p_k,i. Redrawn (up to 1000 times) until every device holds at
// least min_examples; the result lists each device's example indices in
// increasing order. Deterministic for a seed (std::mt19937_64 and the
// standard library's gamma distribution).
Result<std::vector<std::vector<uint64_t>>> DirichletSplit(const std::vector<double>& labels, uint32_t devices,
                                                          double alpha, uint64_t min_examples, uint64_t seed);

// Every example to a uniformly drawn device, equal shard sizes (+-1).
Result<std::vector<std::vector<uint64_t>>> UniformSplit(uint64_t count, uint32_t devices, uint64_t seed);

}  // namespace fedrt::data
