#pragma once
// Federated supervised data for least squares and L2-regularised logistic
// regression (docs/algorithms.md 1.4), host side: synthetic generators with the
// heterogeneity kinds of the statistical-view talk (covariate shift, concept
// shift, quantity skew, each with a strength), CSV loading, and the exact
// minimiser x_star of f = (1/N) sum_c f_c.

#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/core/status.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/lsa_system.h"

namespace fedrt::problems {

enum class FedLoss { kLeastSquares, kLogistic, kSoftmax };

struct FedDataConfig {
  int agents = 10;              // N
  int dim = 5;                  // d
  long samples = 200;           // mean n_c
  double covariate_shift = 0;   // s_x: a = m_c + diag(exp(s_x g_c)) z, m_c = s_x u_c, z, u_c, g_c ~ N(0, I)
  double concept_shift = 0;     // s_y: theta_c = theta_true + s_y v_c, v_c ~ N(0, I)
  double quantity_skew = 0;     // s_n: n_c = max(2, round(n exp(s_n g_c - s_n^2/2))), g_c ~ N(0, 1)
  double noise = 0.5;           // least squares: y = a^T theta_c + noise * N(0, 1)
  uint64_t seed = 1;
  int only_agent = -1;          // >= 0: generate that agent's data only (a device); the others get 0 rows
};

struct FedDataset {
  FedLoss loss = FedLoss::kLeastSquares;
  int dim = 0;                         // the columns of X_c: p features, plus the constant 1 of an intercept
                                       // for least squares and logistic (softmax keeps p: its W holds the intercept)
  int classes = 0;                     // softmax: K
  bool intercept = false;              // z = (a, 1)
  std::vector<MatrixRM> x;             // X_c, n_c x p
  std::vector<Eigen::VectorXd> y;      // y_c (labels in {-1, +1} for logistic, 0..K-1 for softmax)
  std::optional<Eigen::VectorXd> theta_true;  // the generating parameter (synthetic data only)
  std::string source;                  // "synthetic" or the path
  int agents() const { return static_cast<int>(x.size()); }
  // d of the model x: K (p + intercept) for softmax, p otherwise.
  int model_dim() const { return loss == FedLoss::kSoftmax ? classes * (dim + (intercept ? 1 : 0)) : dim; }
  // Columns of X_c that come from the examples: 1 less than dim when least
  // squares or logistic regression appended the intercept's constant column.
  int ones_column() const { return intercept && loss != FedLoss::kSoftmax ? 1 : 0; }
  int features() const { return dim - ones_column(); }
  long total_samples() const;
};

// Draws a synthetic federated data set; every draw comes from
// CounterRng(seed, 0, agent, 0, kProblem) (theta_true from agent index N).
Result<FedDataset> GenerateFedData(FedLoss loss, const FedDataConfig& config);

// Loads per-agent data from `path`:
//  - a directory: every *.csv file is one agent (in file-name order), rows
//    `y,x_1,...,x_d`, optional header line starting with `y`;
//  - a file: rows `agent,y,x_1,...,x_d` with agents numbered 0..N-1, optional
//    header line starting with `agent`.
// Logistic labels may be -1/+1 or 0/1 (0 is read as -1). Blank lines and lines
// starting with '#' are skipped. Errors name the file and line.
Result<FedDataset> LoadFedDataCsv(FedLoss loss, const std::string& path);

// Per-agent shard files of the [data] table (docs/data.md): agent c's
// examples are in ShardPath(train, c).
struct ShardFiles {
  data::ShardFormat format = data::ShardFormat::kCsv;
  std::string train;           // pattern with {id}
  std::string label = "label"; // label column (CSV)
  uint32_t agents = 0;
  uint32_t classes = 0;        // softmax: labels are 0..classes-1
  bool intercept = false;      // z = (a, 1)
  // Every agent's shard already in memory (numpy arrays, runtime/python):
  // read instead of the files, which `train` then only names.
  std::shared_ptr<const std::vector<data::Shard>> memory;
};
// Agent c's shard: read from its file (ShardPath(train, c)), or checked from
// `memory` as a file is (finite values, labels of `kind`).
Result<data::Shard> ReadAgentShard(const ShardFiles& files, uint32_t agent, data::LabelKind kind);
data::LabelKind LabelKindOf(FedLoss loss);
// Appends one agent's shard (its dimension must match the others'); least
// squares and logistic regression with an intercept get z = (a, 1): X_c gains
// a last column of ones, so every host formula holds with d = p + 1.
Status AppendShard(FedDataset& out, const data::Shard& shard);
// A shard left out of the coordinator's copy: its agent and why it did not
// read ("PATH: reason").
struct SkippedShard {
  uint32_t agent = 0;
  std::string why;
};
// Every agent's shard, read with the devices' reader. With `skipped` (the
// coordinator, docs/data.md, "A bad shard in the coordinator's copy") a shard
// that does not read, or whose width differs from the first good one's, is
// left out and listed there; the dataset then holds the others, in order.
Result<FedDataset> LoadFedShards(FedLoss loss, const ShardFiles& files, std::vector<SkippedShard>* skipped = nullptr);

// Least squares as an LSA system: Abar_c = X_c^T X_c / n_c + l2 I, bbar_c = X_c^T y_c / n_c
// (theta_star = x_star, the ridge (OLS when l2 = 0) solution of the uniformly
// weighted objective (1/N) sum_c [(1/(2 n_c)) ||X_c x - y_c||^2 + (l2/2) ||x||^2]).
Result<LsaSystem> LeastSquaresSystem(const FedDataset& data, double l2 = 0.0);

// f_c(x) = (1/n_c) sum_j log(1 + exp(-y_j a_j^T x)) + (l2/2)||x||^2 and its
// gradient and Hessian (docs/algorithms.md 1.4).
void LogisticLocal(const FedDataset& data, int agent, double l2, const Eigen::VectorXd& x, double* value,
                   Eigen::VectorXd* grad, Eigen::MatrixXd* hess);

// Softmax regression's f_c(x) = (1/n_c) sum_j [logsumexp(W z_j) - w_{y_j}^T z_j] + (l2/2)||x||^2
// (x class-major, fedrt/problems/softmax.h), its gradient and Hessian
// H_{kl} = (1/n_c) sum_j p_jk ([k = l] - p_jl) z_j z_j^T + l2 [k = l] I.
void SoftmaxLocal(const FedDataset& data, int agent, double l2, const Eigen::VectorXd& x, double* value,
                  Eigen::VectorXd* grad, Eigen::MatrixXd* hess);

// x_star of least squares without d x d matrices: conjugate gradients on
// (1/N) sum_c (X_c^T X_c / n_c + l2 I) x = (1/N) sum_c X_c^T y_c / n_c from x = 0
// (the minimum-norm solution when l2 = 0 and the system is singular), to a
// relative residual of 1e-13 (an error above 1e-9 after min(d, 20000) + 50
// iterations). `iterations` receives the count.
Result<Eigen::VectorXd> LeastSquaresSolutionCg(const FedDataset& data, double l2, int* iterations = nullptr);

// x_star of (1/N) sum_c f_c: normal equations for least squares (conjugate
// gradients above d = kDenseLeastSquaresMaxDim), damped Newton
// to machine precision (a full step below 1e-15 (1 + ||x||), or a gradient
// below 1e-14 (1 + ||x||)) for logistic and softmax.
Result<Eigen::VectorXd> ExactSolution(const FedDataset& data, double l2);

}  // namespace fedrt::problems
