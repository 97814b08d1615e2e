// A coordinator's instance of an own-data task when its machine does not hold
// the devices' shards ([data] coordinator_reads_shards = false, docs/data.md):
// no data and no oracles, the task's agents, d from model.features or from
// the header of the held-out file, and x_0 = 0 as with the shards.
#include <fmt/format.h>

#include "fedrt/problems/instance.h"

namespace fedrt::problems {

namespace {

bool EndsWith(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

Status Instance::build_blind(const config::Task& task, const DataFiles& files) {
  const config::ProblemSpec& spec = task.problem;
  if (spec.agents == 0) return Status::InvalidArgument("without the shards the task needs problem.agents = N");
  FedDataset shape;
  shape.loss = spec.kind == config::ProblemKind::kLeastSquares ? FedLoss::kLeastSquares
               : spec.kind == config::ProblemKind::kSoftmax    ? FedLoss::kSoftmax
                                                               : FedLoss::kLogistic;
  shape.classes = static_cast<int>(spec.classes);
  shape.intercept = spec.intercept;
  uint32_t p = files.features;
  if (p == 0) {  // the held-out file's feature columns
    if (files.test.empty())
      return Status::InvalidArgument("without the shards the model's dimension comes from model.features or data.test");
    const data::ShardFormat format = EndsWith(files.test, ".csv") ? data::ShardFormat::kCsv : files.shards.format;
    auto test = data::ReadShard(format, files.test, files.shards.label, LabelKindOf(shape.loss), spec.classes);
    if (!test.ok()) return Status(test.status().code(), fmt::format("data.test: {}", test.status().message()));
    p = test->dim;
  }
  shape.dim = static_cast<int>(p) + shape.ones_column();
  if (shape.model_dim() <= 0 || static_cast<uint32_t>(shape.model_dim()) > config::kMaxLinuxDim)
    return Status(StatusCode::kInvalidArgument, fmt::format("{} features give a model of dimension {}, outside [1, {}]", p,
                                                            shape.model_dim(), config::kMaxLinuxDim));
  problem_.agents = spec.agents;
  problem_.dim = static_cast<uint32_t>(shape.model_dim());
  problem_.data_fingerprint = 0;  // the coordinator read no shard
  locals_.resize(spec.agents);
  initial_.assign(problem_.dim, 0.0);
  return Status::Ok();
}

}  // namespace fedrt::problems
