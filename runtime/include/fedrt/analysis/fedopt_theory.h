#pragma once
// Theory of the federated optimisation family (docs/algorithms.md 6), host only:
// the closed-form fixed points of deterministic FedAvg and exact FedProx on
// least squares (statistical-view talk, Pathak-Wainwright), and the first- and
// second-order heterogeneity measures at x_star (Fed-RR talk). The FedAvg bias
// on quadratics is the FedLSA bias (analysis/fedlsa_bias.h) with
// Abar_c = X_c^T X_c / n_c, bbar_c = X_c^T y_c / n_c.

#include <Eigen/Dense>

#include "fedrt/core/status.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/problems/lsa_system.h"

namespace fedrt::analysis {

// theta_FedAvg = (mean_c A_c S_c)^{-1} mean_c S_c b_c, S_c = sum_{l<s} (I - eta A_c)^l:
// the limit of deterministic FedAvg with s local gradient steps of size eta and
// uniform averaging (any server step). s = 1 gives x_star (OLS).
Result<Eigen::VectorXd> FedAvgFixedPoint(const problems::LsaSystem& lsq, double eta, long local_steps);

// theta_FedProx = (I - mean_c P_c)^{-1} (1/mu) mean_c P_c b_c, P_c = (I + A_c/mu)^{-1}:
// the limit of FedProx with the exact prox argmin f_c(x) + (mu/2)||x - x_t||^2
// (the talk's formula with eta = 1/mu).
Result<Eigen::VectorXd> FedProxFixedPoint(const problems::LsaSystem& lsq, double mu);

struct Heterogeneity {
  double zeta1 = 0;  // mean_c ||grad f_c(x*) - grad f(x*)||^2
  double zeta2 = 0;  // mean_c ||hess f_c(x*) - hess f(x*)||_2^2 (spectral norm)
  bool zeta2_computed = false;  // false: N d^3 > kZeta2MaxWork (one d x d eigenproblem per agent)
};

// zeta_2 needs one dense d x d symmetric eigenproblem per agent: skipped past
// N d^3 = 10^10 (20 agents at d = 650 cost 5.5e9; 1000 would take minutes).
inline constexpr double kZeta2MaxWork = 1e10;

// zeta_1 and zeta_2 at x_star for the data's loss (l2 is the logistic weight lambda).
Heterogeneity HeterogeneityAt(const problems::FedDataset& data, double l2, const Eigen::VectorXd& x_star);

}  // namespace fedrt::analysis
