#pragma once
// A held-out test set ([data] test, docs/data.md): read once by whoever
// evaluates the global model (the simulator, the coordinator) with the
// devices' shard reader, then scored at every round's model:
//   test_loss(x) = (1/n) sum_j l(x; a_j, y_j) + (l2/2)||x||^2 (the model's f),
//   test_accuracy(x) = fraction of examples whose predicted class is y_j
// (binary logistic: sign(a_j^T x); softmax: argmax_k w_k^T z_j; least
// squares has no accuracy: NaN). Host code.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/report/results.h"

namespace fedrt::report {

struct TestScore {
  double loss = 0.0;
  double accuracy = 0.0;
};

// test_loss and test_accuracy of model `x` on agent `agent`'s examples of
// `data` (the held-out set, or the union's model on any shard).
TestScore ScoreModel(const problems::FedDataset& data, int agent, double l2, const double* x);

class HeldOutSet {
 public:
  // Reads `path` (CSV when it ends in .csv, else the shards' format) for the
  // task's model; its feature count must match the model's dimension.
  static Result<HeldOutSet> Load(const task::Task& task, const problems::ShardFiles& files, const std::string& path);

  TestScore score(const double* x) const;
  long examples() const { return static_cast<long>(data_.y[0].size()); }
  const std::string& path() const { return data_.source; }

 private:
  problems::FedDataset data_;  // one agent: the test set
  double l2_ = 0.0;
};

// The held-out scores of every algorithm's runs, as metrics.csv's
// test_loss / test_accuracy columns: row 0 scores x_0, row t + 1 round t's
// model (NaN for a round never recorded).
class HeldOutScores {
 public:
  HeldOutScores(HeldOutSet set, uint32_t rounds) : set_(std::move(set)), rounds_(rounds) {}
  // Scores `model` (d numbers) as round `round`'s of (algorithm, run); the
  // initial exchange (protocol::kInitRound) and rounds past the schedule are
  // ignored. Different (algorithm, run) pairs may record from different threads.
  void record(size_t algorithm, uint32_t run, uint32_t round, const double* model);
  // Appends runs 0..runs-1 of `algorithm` to res.test_loss / test_accuracy,
  // row 0 from `initial`, and res.extra["test_examples"].
  void fill(size_t algorithm, uint32_t runs, const double* initial, AlgorithmResult& res) const;
  const HeldOutSet& set() const { return set_; }

 private:
  HeldOutSet set_;
  uint32_t rounds_;
  std::map<size_t, std::map<uint32_t, std::vector<TestScore>>> rows_;  // [algorithm][run][row]
  std::mutex rows_mu_;  // guards rows_'s maps (a row itself belongs to one pair)
};

}  // namespace fedrt::report
