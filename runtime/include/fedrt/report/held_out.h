#pragma once
// A held-out test set ([data] test, docs/data.md): read once by whoever
// evaluates the global model (the simulator, the coordinator) with the
// devices' shard reader, then scored at every round's model:
//   test_loss(x) = (1/n) sum_j l(x; a_j, y_j) + (l2/2)||x||^2 (the model's f),
//   test_accuracy(x) = fraction of examples whose predicted class is y_j
// (binary logistic: sign(a_j^T x); softmax: argmax_k w_k^T z_j; least
// squares has no accuracy: NaN). Host code.

#include <string>

#include <Eigen/Dense>

#include "fedrt/config/task.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/fed_data.h"

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
  static Result<HeldOutSet> Load(const config::Task& task, const problems::ShardFiles& files, const std::string& path);

  TestScore score(const double* x) const;
  long examples() const { return static_cast<long>(data_.y[0].size()); }
  const std::string& path() const { return data_.source; }

 private:
  problems::FedDataset data_;  // one agent: the test set
  double l2_ = 0.0;
};

}  // namespace fedrt::report
