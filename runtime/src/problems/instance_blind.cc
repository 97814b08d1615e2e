// A coordinator's instance of a task when its machine holds none of the
// agents' data: an own-data task whose shards stay on the devices ([data]
// coordinator_reads_shards = false, docs/data.md), or a generated least
// squares / logistic problem the coordinator does not generate ([problem]
// coordinator_generates = false). No data and no oracles: the task's agents,
// d (own data: from model.features or the header of the held-out file;
// generated: the task's), and x_0 = 0 as with the data.
#include <fmt/format.h>

#include "fedrt/problems/instance.h"

namespace fedrt::problems {

namespace {

bool EndsWith(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// d of an own-data model from model.features = p, or from data.test's columns.
Result<uint32_t> OwnModelDim(const task::ProblemSpec& spec, const DataFiles& files) {
  FedDataset shape;
  shape.loss = spec.kind == task::ProblemKind::kLeastSquares ? FedLoss::kLeastSquares
               : spec.kind == task::ProblemKind::kSoftmax    ? FedLoss::kSoftmax
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
  if (shape.model_dim() <= 0 || static_cast<uint32_t>(shape.model_dim()) > task::kMaxLinuxDim)
    return Status(StatusCode::kInvalidArgument, fmt::format("{} features give a model of dimension {}, outside [1, {}]", p,
                                                            shape.model_dim(), task::kMaxLinuxDim));
  return static_cast<uint32_t>(shape.model_dim());
}

}  // namespace

Status Instance::build_blind(const task::Task& task, const DataFiles& files) {
  const task::ProblemSpec& spec = task.problem;
  if (spec.agents == 0) return Status::InvalidArgument("without the agents' data the task needs problem.agents = N");
  uint32_t d = spec.dim;
  if (spec.own_data) {
    auto own = OwnModelDim(spec, files);
    if (!own.ok()) return own.status();
    d = *own;
  } else if (d == 0) {
    return Status::InvalidArgument("problem.dim must be positive");
  }
  FEDRT_TRY(CheckFedProxExact(task, static_cast<int>(d)));
  problem_.agents = spec.agents;
  problem_.dim = d;
  problem_.data_fingerprint = 0;  // the coordinator read or generated no data
  locals_.resize(spec.agents);
  initial_.assign(problem_.dim, 0.0);
  return Status::Ok();
}

}  // namespace fedrt::problems
