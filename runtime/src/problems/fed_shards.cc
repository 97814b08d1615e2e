// Federated data from per-agent shard files (fedrt/problems/fed_data.h): the
// simulator and the coordinator read every agent's shard, a device its own,
// all through the same reader (fedrt/data/shard.h), so they hold the same
// numbers.
#include <fmt/format.h>

#include "fedrt/data/shard.h"
#include "fedrt/problems/fed_data.h"

namespace fedrt::problems {

data::LabelKind LabelKindOf(FedLoss loss) {
  switch (loss) {
    case FedLoss::kLeastSquares: return data::LabelKind::kReal;
    case FedLoss::kLogistic: return data::LabelKind::kBinary;
    case FedLoss::kSoftmax: return data::LabelKind::kClass;
  }
  return data::LabelKind::kReal;
}

Status AppendShard(FedDataset& out, const data::Shard& s) {
  const int ones = out.ones_column();
  if (out.dim == 0) out.dim = static_cast<int>(s.dim) + ones;
  const int p = out.dim - ones;
  if (static_cast<int>(s.dim) != p)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: {} features, but the other shards have {} (dimensions must match)", s.path, s.dim, p));
  const long n = static_cast<long>(s.count());
  MatrixRM xc(n, out.dim);
  Eigen::VectorXd yc(n);
  for (long j = 0; j < n; ++j) {
    for (int k = 0; k < p; ++k) xc(j, k) = s.x[static_cast<size_t>(j) * s.dim + k];
    if (ones) xc(j, p) = 1.0;
    yc[j] = s.y[static_cast<size_t>(j)];
  }
  out.x.push_back(std::move(xc));
  out.y.push_back(std::move(yc));
  return Status::Ok();
}

Result<data::Shard> ReadAgentShard(const ShardFiles& files, uint32_t agent, data::LabelKind kind) {
  if (!files.memory) return data::ReadShard(files.format, data::ShardPath(files.train, agent), files.label, kind, files.classes);
  if (agent >= files.memory->size())
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: agent {} has no shard ({} given)", files.train, agent, files.memory->size()));
  const data::Shard& given = (*files.memory)[agent];
  data::ArraySource source = given.source();
  auto s = data::ReadSource(source, kind, fmt::format("{} agent {}", files.train, agent), files.classes);
  if (!s.ok()) return s.status();
  s->path = fmt::format("{} agent {}", files.train, agent);
  s->features = given.features;
  return s;
}

Result<FedDataset> LoadFedShards(FedLoss loss, const ShardFiles& files, std::vector<SkippedShard>* skipped) {
  if (files.agents == 0) return Status(StatusCode::kInvalidArgument, "no shards: the data has 0 agents");
  FedDataset out;
  out.loss = loss;
  out.source = files.train;
  out.classes = static_cast<int>(files.classes);
  out.intercept = files.intercept;
  Status first_error;
  for (uint32_t c = 0; c < files.agents; ++c) {
    auto s = ReadAgentShard(files, c, LabelKindOf(loss));
    Status st = s.ok() ? AppendShard(out, *s) : s.status();
    if (st.ok()) continue;
    if (skipped == nullptr) return st;
    skipped->push_back(SkippedShard{c, st.message()});
    if (first_error.ok()) first_error = st;
  }
  if (out.agents() == 0)
    return Status(first_error.code(), fmt::format("no shard of '{}' reads (the first: {})", files.train,
                                                  first_error.message()));
  return out;
}

}  // namespace fedrt::problems
