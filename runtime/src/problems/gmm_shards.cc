// Gaussian mixtures on the agents' own shards (fedrt/problems/gmm_data.h,
// docs/data.md "Gaussian mixtures"): the simulator and the coordinator read
// every agent's shard with the devices' reader, and seed the means by
// k-means++ when the experiment gives no [model] init.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "fedrt/task/limits.h"
#include "fedrt/core/rng.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/gmm_data.h"
#include "fedrt/problems/gmm_oracle.h"

namespace fedrt::problems {

Result<GmmData> LoadGmmShards(const ShardFiles& files, int components) {
  if (files.agents == 0) return Status(StatusCode::kInvalidArgument, "no shards: the data has 0 agents");
  if (components < 1 || components > kMaxGmmComponents)
    return Status(StatusCode::kInvalidArgument, fmt::format("model.components must be in [1, {}], got {}",
                                                            kMaxGmmComponents, components));
  GmmData d;
  d.G = components;
  d.p = 0;
  d.n = files.agents;
  d.source = files.train;
  for (uint32_t c = 0; c < files.agents; ++c) {
    auto s = ReadAgentShard(files, c, data::LabelKind::kNone);
    if (!s.ok()) return s.status();
    if (d.p == 0) d.p = static_cast<int>(s->dim);
    if (static_cast<int>(s->dim) != d.p)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: {} columns, but the other shards have {} (dimensions must match)", s->path, s->dim,
                                d.p));
    if (s->count() > std::numeric_limits<uint32_t>::max())
      return Status(StatusCode::kInvalidArgument, fmt::format("{}: more than 2^32 - 1 points", s->path));
    d.counts.push_back(static_cast<uint32_t>(s->count()));
    d.points.push_back(std::move(s->x));
  }
  if (d.p > 1024)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("'{}': {} columns; a Gaussian mixture takes at most 1024 (p)", files.train, d.p));
  d.dim = d.G * (1 + d.p);
  if (static_cast<uint64_t>(d.dim) > task::kMaxLinuxDim)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("'{}': G (1 + p) = {} x (1 + {}) = {} statistics, more than the Linux wire's {}",
                              files.train, d.G, d.p, d.dim, task::kMaxLinuxDim));
  d.m = d.counts[0];
  for (uint32_t c : d.counts)
    if (c != d.m) d.m = 0;
  return d;
}

std::vector<double> GmmKMeansPlusPlus(const GmmData& d, uint64_t seed) {
  const size_t p = static_cast<size_t>(d.p);
  std::vector<const double*> pts;  // pooled, agent 0's rows first
  for (uint32_t c = 0; c < d.n; ++c)
    for (uint32_t i = 0; i < d.counts[c]; ++i) pts.push_back(d.points[c].data() + i * p);
  const size_t n = pts.size();
  CounterRng rng(seed, 0, kGmmSeedingAgent, 0, RngStream::kProblem);
  auto uniform_index = [&]() { return std::min(n - 1, static_cast<size_t>(rng.uniform() * static_cast<double>(n))); };
  std::vector<double> means;
  means.reserve(static_cast<size_t>(d.G) * p);
  std::vector<double> d2(n, std::numeric_limits<double>::infinity());
  size_t pick = uniform_index();
  for (int g = 0; g < d.G; ++g) {
    means.insert(means.end(), pts[pick], pts[pick] + p);
    if (g + 1 == d.G) break;
    double total = 0;
    for (size_t i = 0; i < n; ++i) {  // D(y)^2 to the nearest chosen mean, summed in pooled order
      double e = 0;
      for (size_t j = 0; j < p; ++j) e += (pts[i][j] - pts[pick][j]) * (pts[i][j] - pts[pick][j]);
      d2[i] = std::min(d2[i], e);
      total += d2[i];
    }
    if (!(total > 0)) {  // every point is a chosen mean already: any point
      pick = uniform_index();
      continue;
    }
    const double u = rng.uniform() * total;
    double acc = 0;
    pick = n - 1;
    for (size_t i = 0; i < n; ++i) {
      acc += d2[i];
      if (u < acc && d2[i] > 0) {
        pick = i;
        break;
      }
    }
  }
  return means;
}

std::vector<double> GmmStatisticOfMeans(int G, int p, const std::vector<double>& means) {
  std::vector<double> s(static_cast<size_t>(G) * (1 + p));
  const double w = 1.0 / G;
  for (int g = 0; g < G; ++g) {
    s[g] = w;
    for (int j = 0; j < p; ++j) s[G + g * p + j] = w * means[static_cast<size_t>(g) * p + j];
  }
  return s;
}

}  // namespace fedrt::problems
