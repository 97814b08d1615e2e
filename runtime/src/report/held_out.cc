#include "fedrt/report/held_out.h"

#include <cmath>

#include <fmt/format.h>

#include "fedrt/data/shard.h"
#include "fedrt/problems/logistic.h"
#include "fedrt/protocol/messages.h"

namespace fedrt::report {

namespace {

bool EndsWith(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

Result<HeldOutSet> HeldOutSet::Load(const task::Task& task, const problems::ShardFiles& files, const std::string& path) {
  const task::ProblemKind kind = task.problem.kind;
  const problems::FedLoss loss = kind == task::ProblemKind::kLogistic  ? problems::FedLoss::kLogistic
                                 : kind == task::ProblemKind::kSoftmax ? problems::FedLoss::kSoftmax
                                                                         : problems::FedLoss::kLeastSquares;
  const data::ShardFormat format = EndsWith(path, ".csv") ? data::ShardFormat::kCsv : files.format;
  auto shard = data::ReadShard(format, path, files.label, problems::LabelKindOf(loss), task.problem.classes);
  if (!shard.ok()) return Status(shard.status().code(), fmt::format("data.test: {}", shard.status().message()));
  HeldOutSet h;
  h.data_.loss = loss;
  h.data_.source = path;
  h.data_.classes = static_cast<int>(task.problem.classes);
  h.data_.intercept = task.problem.intercept;
  FEDRT_TRY(problems::AppendShard(h.data_, *shard));
  if (h.data_.model_dim() != static_cast<int>(task.problem.dim))
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("data.test: '{}' gives a model of dimension {}, the training shards {}", path,
                              h.data_.model_dim(), task.problem.dim));
  h.l2_ = task.problem.synthetic.l2;
  return h;
}

TestScore HeldOutSet::score(const double* x) const { return ScoreModel(data_, 0, l2_, x); }

void HeldOutScores::record(size_t algorithm, uint32_t run, uint32_t round, const double* model) {
  if (round == protocol::kInitRound) return;
  std::vector<TestScore>* row;
  {
    std::lock_guard<std::mutex> lock(rows_mu_);
    row = &rows_[algorithm][run];  // map nodes stay put when other pairs insert theirs
    if (row->empty()) row->assign(rounds_ + 1, TestScore{std::nan(""), std::nan("")});
  }
  if (round < rounds_) (*row)[round + 1] = set_.score(model);
}

void HeldOutScores::fill(size_t algorithm, uint32_t runs, const double* initial, AlgorithmResult& res) const {
  const TestScore first = set_.score(initial);
  const auto runs_of = rows_.find(algorithm);
  for (uint32_t run = 0; run < runs; ++run) {
    std::vector<TestScore> row;
    if (runs_of != rows_.end()) {
      const auto it = runs_of->second.find(run);
      if (it != runs_of->second.end()) row = it->second;
    }
    row.resize(rounds_ + 1, TestScore{std::nan(""), std::nan("")});
    row[0] = first;
    std::vector<double> loss, acc;
    for (const TestScore& s : row) {
      loss.push_back(s.loss);
      acc.push_back(s.accuracy);
    }
    res.test_loss.push_back(std::move(loss));
    res.test_accuracy.push_back(std::move(acc));
  }
  res.extra["test_examples"] = set_.examples();
}

TestScore ScoreModel(const problems::FedDataset& data, int agent, double l2, const double* x) {
  const problems::MatrixRM& a = data.x[agent];
  const Eigen::VectorXd& y = data.y[agent];
  const long n = static_cast<long>(y.size());
  TestScore s;
  if (data.loss == problems::FedLoss::kSoftmax) {
    const int p = data.dim, K = data.classes, P = p + (data.intercept ? 1 : 0);
    const Eigen::Map<const problems::MatrixRM> w(x, K, P);  // class-major
    Eigen::MatrixXd logits = a * w.leftCols(p).transpose();
    if (data.intercept) logits.rowwise() += w.col(p).transpose();
    long right = 0;
    for (long j = 0; j < n; ++j) {
      Eigen::Index best = 0;
      logits.row(j).maxCoeff(&best);  // the first of equal maxima
      right += static_cast<double>(best) == y[j];
    }
    const Eigen::Map<const Eigen::VectorXd> xv(x, data.model_dim());
    problems::SoftmaxLocal(data, agent, l2, xv, &s.loss, nullptr, nullptr);
    s.accuracy = static_cast<double>(right) / static_cast<double>(n);
    return s;
  }
  const Eigen::Map<const Eigen::VectorXd> w(x, data.dim);
  const Eigen::VectorXd z = a * w;
  double sum = 0.0;
  long right = 0;
  const bool logistic = data.loss == problems::FedLoss::kLogistic;
  for (long j = 0; j < n; ++j) {
    if (logistic) {
      const double m = -y[j] * z[j];  // log(1 + e^m) without overflow
      sum += m > 0 ? m + std::log1p(std::exp(-m)) : std::log1p(std::exp(m));
      right += (z[j] >= 0 ? 1.0 : -1.0) == y[j];
    } else {
      sum += 0.5 * (z[j] - y[j]) * (z[j] - y[j]);
    }
  }
  s.loss = sum / static_cast<double>(n) + (l2 > 0 ? 0.5 * l2 * w.squaredNorm() : 0.0);
  s.accuracy = logistic ? static_cast<double>(right) / static_cast<double>(n) : std::nan("");
  return s;
}

}  // namespace fedrt::report
