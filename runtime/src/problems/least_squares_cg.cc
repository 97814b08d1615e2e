// x_star of least squares at large d (fedrt/problems/fed_data.h): conjugate
// gradients on the averaged normal equations, matrix-free, so memory stays
// O(N n_c d) (the data) and each iteration costs two passes over the data.
#include <cmath>

#include <fmt/format.h>

#include "fedrt/problems/fed_data.h"

namespace fedrt::problems {

Result<Eigen::VectorXd> LeastSquaresSolutionCg(const FedDataset& data, double l2, int* iterations) {
  const int d = data.dim, n = data.agents();
  if (n == 0 || d == 0) return Status::InvalidArgument("least squares: no agents or no features");
  // H v = (1/N) sum_c X_c^T X_c v / n_c + l2 v, b = (1/N) sum_c X_c^T y_c / n_c.
  auto apply = [&](const Eigen::VectorXd& v) {
    Eigen::VectorXd out = l2 * v;
    for (int c = 0; c < n; ++c) {
      const double w = 1.0 / (static_cast<double>(n) * static_cast<double>(data.x[c].rows()));
      out.noalias() += w * (data.x[c].transpose() * (data.x[c] * v));
    }
    return out;
  };
  Eigen::VectorXd b = Eigen::VectorXd::Zero(d);
  for (int c = 0; c < n; ++c)
    b.noalias() += (data.x[c].transpose() * data.y[c]) / (static_cast<double>(n) * static_cast<double>(data.x[c].rows()));
  // From x = 0 the iterates stay in the span of the rows, so without l2 and
  // with fewer samples than d this converges to the minimum-norm solution.
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d), r = b, p = r;
  const double b_norm = b.norm(), tol = 1e-13 * (b_norm > 0 ? b_norm : 1.0);
  double rr = r.squaredNorm();
  const int max_iter = std::min(d, 20000) + 50;
  int k = 0;
  for (; k < max_iter && std::sqrt(rr) > tol; ++k) {
    const Eigen::VectorXd hp = apply(p);
    const double php = p.dot(hp);
    if (!(php > 0)) break;  // p in the null space: the remaining residual is outside the range
    const double alpha = rr / php;
    x.noalias() += alpha * p;
    r.noalias() -= alpha * hp;
    const double next = r.squaredNorm();
    p = r + (next / rr) * p;
    rr = next;
  }
  if (iterations) *iterations = k;
  const double rel = std::sqrt((apply(x) - b).squaredNorm()) / (b_norm > 0 ? b_norm : 1.0);
  if (!(rel <= 1e-9))
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("least squares: conjugate gradients stopped at relative residual {:.3e} after {} "
                              "iterations (d = {}); model.l2 > 0 (ridge) makes the system well conditioned",
                              rel, k, d));
  return x;
}

}  // namespace fedrt::problems
