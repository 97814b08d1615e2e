#include "fedrt/report/held_out.h"

#include <cmath>

#include <fmt/format.h>

#include "fedrt/data/shard.h"
#include "fedrt/problems/logistic.h"

namespace fedrt::report {

namespace {

bool EndsWith(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

Result<HeldOutSet> HeldOutSet::Load(const config::Task& task, const problems::ShardFiles& files, const std::string& path) {
  const problems::FedLoss loss =
      task.problem.kind == config::ProblemKind::kLogistic ? problems::FedLoss::kLogistic : problems::FedLoss::kLeastSquares;
  const data::ShardFormat format = EndsWith(path, ".csv") ? data::ShardFormat::kCsv : files.format;
  auto shard = data::ReadShard(format, path, files.label, problems::LabelKindOf(loss));
  if (!shard.ok()) return Status(shard.status().code(), fmt::format("data.test: {}", shard.status().message()));
  HeldOutSet h;
  h.data_.loss = loss;
  h.data_.source = path;
  FEDRT_TRY(problems::AppendShard(h.data_, *shard));
  if (h.data_.dim != static_cast<int>(task.problem.dim))
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("data.test: '{}' gives a model of dimension {}, the training shards {}", path, h.data_.dim,
                              task.problem.dim));
  h.l2_ = task.problem.synthetic.l2;
  return h;
}

TestScore HeldOutSet::score(const double* x) const {
  const problems::MatrixRM& a = data_.x[0];
  const Eigen::VectorXd& y = data_.y[0];
  const Eigen::Map<const Eigen::VectorXd> w(x, data_.dim);
  const Eigen::VectorXd z = a * w;
  const long n = static_cast<long>(y.size());
  double sum = 0.0;
  long right = 0;
  for (long j = 0; j < n; ++j) {
    if (data_.loss == problems::FedLoss::kLogistic) {
      const double m = -y[j] * z[j];  // log(1 + e^m) without overflow
      sum += m > 0 ? m + std::log1p(std::exp(-m)) : std::log1p(std::exp(m));
      right += (z[j] >= 0 ? 1.0 : -1.0) == y[j];
    } else {
      sum += 0.5 * (z[j] - y[j]) * (z[j] - y[j]);
    }
  }
  TestScore s;
  s.loss = sum / static_cast<double>(n) + (data_.loss == problems::FedLoss::kLogistic ? 0.5 * l2_ * w.squaredNorm() : 0.0);
  s.accuracy = data_.loss == problems::FedLoss::kLogistic ? static_cast<double>(right) / static_cast<double>(n) : std::nan("");
  return s;
}

}  // namespace fedrt::report
