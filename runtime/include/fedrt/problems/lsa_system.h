#pragma once
// LsaSystem: the expected operators of a federated LSA problem (docs/algorithms.md
// 1.1) and its exact solutions, host side (double):
//   theta_star = (sum_c Abar_c)^{-1} sum_c bbar_c,  theta_c = Abar_c^{-1} bbar_c.

#include <vector>

#include <Eigen/Dense>

#include "fedrt/core/status.h"

namespace fedrt::problems {

using MatrixRM = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct LsaSystem {
  int dim = 0;
  std::vector<MatrixRM> abar;          // Abar_c (d x d), not symmetric in general
  std::vector<Eigen::VectorXd> bbar;   // bbar_c
  std::vector<Eigen::VectorXd> theta_c;  // Abar_c^{-1} bbar_c (NaN when Abar_c is singular)
  Eigen::VectorXd theta_star;          // solution of the averaged system
  int agents() const { return static_cast<int>(abar.size()); }

  // Fills theta_c and theta_star from abar/bbar; fails if sum_c Abar_c is singular.
  Status solve();
};

}  // namespace fedrt::problems
