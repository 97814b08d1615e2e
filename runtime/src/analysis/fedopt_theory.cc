#include "fedrt/analysis/fedopt_theory.h"

#include <fmt/format.h>

#include "fedrt/analysis/fedlsa_bias.h"

namespace fedrt::analysis {

Result<Eigen::VectorXd> FedAvgFixedPoint(const problems::LsaSystem& lsq, double eta, long s) {
  const int d = lsq.dim;
  const double inv_n = 1.0 / lsq.agents();
  Eigen::MatrixXd lhs = Eigen::MatrixXd::Zero(d, d);
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(d);
  problems::MatrixRM g, series;  // series = S_c = sum_{l<s} (I - eta A_c)^l
  for (int c = 0; c < lsq.agents(); ++c) {
    PowerAndSeries(lsq.abar[c], eta, s, g, series);
    lhs += inv_n * lsq.abar[c] * series;
    rhs += inv_n * series * lsq.bbar[c];
  }
  auto x = problems::SolveIfRegular(lhs, rhs);
  if (!x) return Status(StatusCode::kFailedPrecondition, std::string("FedAvg fixed point: mean_c A_c S_c is singular"));
  return *x;
}

Result<Eigen::VectorXd> FedProxFixedPoint(const problems::LsaSystem& lsq, double mu) {
  if (!(mu > 0)) return Status(StatusCode::kInvalidArgument, fmt::format("FedProx fixed point: mu must be > 0, got {}", mu));
  const int d = lsq.dim;
  const double inv_n = 1.0 / lsq.agents();
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(d, d);
  Eigen::MatrixXd mean_p = Eigen::MatrixXd::Zero(d, d);
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(d);
  for (int c = 0; c < lsq.agents(); ++c) {
    const Eigen::MatrixXd P = (I + Eigen::MatrixXd(lsq.abar[c]) / mu).inverse();
    mean_p += inv_n * P;
    rhs += (inv_n / mu) * P * lsq.bbar[c];
  }
  auto x = problems::SolveIfRegular(Eigen::MatrixXd(I - mean_p), rhs);
  if (!x) return Status(StatusCode::kFailedPrecondition, std::string("FedProx fixed point: I - mean_c P_c is singular"));
  return *x;
}

Heterogeneity HeterogeneityAt(const problems::FedDataset& data, double l2, const Eigen::VectorXd& x_star) {
  const int n = data.agents();
  const int d = data.model_dim();
  // One agent's gradient and Hessian at x_star; the Hessians are made twice
  // (mean, then deviations) rather than held: N of them are N d^2 doubles.
  auto local = [&](int c, Eigen::VectorXd* g, Eigen::MatrixXd* h) {
    if (data.loss == problems::FedLoss::kLeastSquares) {
      const double inv = 1.0 / static_cast<double>(data.x[c].rows());
      *h = (data.x[c].transpose() * data.x[c]) * inv;
      if (g) *g = *h * x_star - (data.x[c].transpose() * data.y[c]) * inv;
    } else if (data.loss == problems::FedLoss::kSoftmax) {
      problems::SoftmaxLocal(data, c, l2, x_star, nullptr, g, h);
    } else {
      problems::LogisticLocal(data, c, l2, x_star, nullptr, g, h);
    }
  };
  std::vector<Eigen::VectorXd> g(n);
  Eigen::VectorXd g_mean = Eigen::VectorXd::Zero(d);
  Eigen::MatrixXd h_mean = Eigen::MatrixXd::Zero(d, d);
  Eigen::MatrixXd h;
  for (int c = 0; c < n; ++c) {
    local(c, &g[c], &h);
    g_mean += g[c] / n;
    h_mean += h / n;
  }
  Heterogeneity out;
  for (int c = 0; c < n; ++c) out.zeta1 += (g[c] - g_mean).squaredNorm() / n;
  out.zeta2_computed = static_cast<double>(n) * d * d * d <= kZeta2MaxWork;
  if (!out.zeta2_computed) return out;
  for (int c = 0; c < n; ++c) {
    local(c, nullptr, &h);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h - h_mean, Eigen::EigenvaluesOnly);
    const double op = es.eigenvalues().cwiseAbs().maxCoeff();
    out.zeta2 += op * op / n;
  }
  return out;
}

}  // namespace fedrt::analysis
