#pragma once
// LsaSystem: the expected operators of a federated LSA problem (docs/algorithms.md
// 1.1) and its exact solutions, host side (double):
//   theta_star = (sum_c Abar_c)^{-1} sum_c bbar_c,  theta_c = Abar_c^{-1} bbar_c.

#include <optional>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/core/status.h"

namespace fedrt::problems {

using MatrixRM = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// x = A^{-1} b by LU with partial pivoting (O(d^3) with a small constant;
// full pivoting took about 4 s at d = 1024), or nothing when A is singular to
// working precision: its reciprocal condition estimate is below 16 d eps.
template <class M>
std::optional<Eigen::VectorXd> SolveIfRegular(const M& a, const Eigen::VectorXd& b) {
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(a);
  const double rcond = lu.rcond();
  if (!(rcond > 16.0 * static_cast<double>(a.rows()) * Eigen::NumTraits<double>::epsilon())) return std::nullopt;
  return Eigen::VectorXd(lu.solve(b));
}

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
