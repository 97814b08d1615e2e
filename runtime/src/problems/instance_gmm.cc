// Gaussian mixtures on the agents' own shards (docs/data.md, "Gaussian
// mixtures"): the simulator and the coordinator read every shard, a device its
// own; a coordinator without the shards ([data] coordinator_reads_shards =
// false) knows G, p and the initial means only.
#include <fmt/format.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/task/limits.h"
#include "fedrt/problems/instance.h"

namespace fedrt::problems {

namespace {

// [model] init: G means of p numbers each.
Status CheckMeans(const std::vector<double>& init, int G, int p, const std::string& where) {
  if (init.size() != static_cast<size_t>(G) * static_cast<size_t>(p))
    return Status::Invalid(fmt::format("model.init has {} numbers, but G p = {} x {} = {} ({}; the G means, component-major)",
                           init.size(), G, p, G * p, where));
  return Status::Ok();
}

}  // namespace

Status Instance::build_gmm_shards(const task::Task& task, const DataFiles& files) {
  const task::ProblemSpec& spec = task.problem;
  const int G = static_cast<int>(spec.gmm.components);
  GmmData g;
  if (files.read_shards) {
    ShardFiles shards = files.shards;
    auto data = LoadGmmShards(shards, G);
    if (!data.ok()) return data.status();
    g = std::move(*data);
    if (files.features != 0 && static_cast<uint32_t>(g.p) != files.features)
      return Status::Invalid(fmt::format("model.features = {}, but the shards '{}' have {} columns", files.features,
                             files.shards.train, g.p));
  } else {  // the coordinator without the shards: no points, no oracles
    g.G = G;
    g.p = static_cast<int>(files.features);
    g.n = spec.agents;
    g.source = files.shards.train;
    if (g.p < 1 || g.p > 1024) return Status::Invalid("gmm without the shards: model.features = p (1 to 1024) is needed");
    g.dim = g.G * (1 + g.p);
    if (static_cast<uint64_t>(g.dim) > task::kMaxLinuxDim)
      return Status::Invalid(fmt::format("G (1 + p) = {} statistics, more than the Linux wire's {}", g.dim, task::kMaxLinuxDim));
    g.counts.assign(g.n, 0);
    g.points.resize(g.n);
    if (files.initial.empty())
      return Status::Invalid("gmm without the shards: [model] init (the G means) is needed, k-means++ seeding reads every shard");
  }
  std::vector<double> means = files.initial;
  if (means.empty()) means = GmmKMeansPlusPlus(g, spec.seed);
  FEDRT_TRY(CheckMeans(means, g.G, g.p, fmt::format("the shards '{}' have p = {} columns", g.source, g.p)));
  gmm_ = std::move(g);
  const GmmData& d = *gmm_;
  task::Fnv1a h;
  h.u64(static_cast<uint64_t>(d.p));
  for (uint32_t c = 0; c < d.n; ++c) {
    h.u64(d.points[c].size());
    for (double v : d.points[c]) h.f64(v);
  }
  problem_.data_fingerprint = files.read_shards ? h.value() : 0;
  problem_.agents = d.n;
  problem_.dim = static_cast<uint32_t>(d.dim);
  problem_.gmm.data_dim = static_cast<uint32_t>(d.p);
  locals_.resize(d.n);
  if (files.read_shards) {
    gmm_oracles_.reserve(d.n);
    for (uint32_t c = 0; c < d.n; ++c) {
      auto o = GmmOracle<double>::create(d.points[c].data(), d.counts[c], d.G, d.p);
      if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
      gmm_oracles_.push_back(*o);
    }
    for (uint32_t c = 0; c < d.n; ++c) locals_[c].gmm = &gmm_oracles_[c];
  }
  initial_ = GmmStatisticOfMeans(d.G, d.p, means);
  return Status::Ok();
}

Status Instance::build_own_gmm(const task::Task& task, uint32_t agent, const data::Shard& s) {
  const task::ProblemSpec& spec = task.problem;
  if (s.dim != spec.gmm.data_dim)
    return Status::Invalid(fmt::format("{}: {} columns, but the task's Gaussian mixture has p = {}", s.path, s.dim,
                           spec.gmm.data_dim));
  if (s.count() == 0 || s.count() > 0xFFFFFFFFull) return Status::Invalid(fmt::format("{}: no points, or more than 2^32 - 1", s.path));
  GmmData g;
  g.G = static_cast<int>(spec.gmm.components);
  g.p = static_cast<int>(s.dim);
  g.dim = g.G * (1 + g.p);
  g.n = spec.agents;
  g.source = s.path;
  g.counts.assign(g.n, 0);
  g.points.resize(g.n);
  g.counts[agent] = static_cast<uint32_t>(s.count());
  g.points[agent] = s.x;
  gmm_ = std::move(g);
  auto o = GmmOracle<double>::create(gmm_->points[agent].data(), gmm_->counts[agent], gmm_->G, gmm_->p);
  if (!o.ok()) return Status(o.status().code(), fmt::format("{}: {}", s.path, o.status().message()));
  gmm_oracles_.push_back(*o);
  locals_.resize(spec.agents);
  locals_[agent].gmm = &gmm_oracles_.back();
  initial_.clear();  // the device receives Shat_0 from the coordinator
  return Status::Ok();
}

}  // namespace fedrt::problems
