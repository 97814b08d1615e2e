// Softmax regression on the host (fedrt/problems/fed_data.h): an agent's
// objective, gradient and Hessian for the centralized optimum x_star and the
// heterogeneity measures. The device oracle is fedrt/problems/softmax.h.
#include <cmath>

#include "fedrt/problems/fed_data.h"

namespace fedrt::problems {

void SoftmaxLocal(const FedDataset& data, int c, double l2, const Eigen::VectorXd& x, double* value,
                  Eigen::VectorXd* grad, Eigen::MatrixXd* hess) {
  const MatrixRM& a = data.x[c];
  const Eigen::VectorXd& y = data.y[c];
  const long n = a.rows();
  const int p = data.dim, K = data.classes, P = p + (data.intercept ? 1 : 0);
  const double inv_n = 1.0 / static_cast<double>(n);
  Eigen::MatrixXd z(n, P);  // z_j = (a_j, 1)
  z.leftCols(p) = a;
  if (data.intercept) z.col(p).setOnes();
  const Eigen::Map<const MatrixRM> w(x.data(), K, P);  // class-major: row k is w_k
  Eigen::MatrixXd prob = z * w.transpose();            // logits, then softmax, n x K
  double total = 0.0;
  for (long j = 0; j < n; ++j) {
    const double top = prob.row(j).maxCoeff();
    const double label_logit = prob(j, static_cast<long>(y[j]));
    prob.row(j) = (prob.row(j).array() - top).exp();
    const double sum = prob.row(j).sum();
    prob.row(j) /= sum;
    total += top + std::log(sum) - label_logit;
  }
  if (value) *value = total * inv_n + 0.5 * l2 * x.squaredNorm();
  if (grad) {
    Eigen::MatrixXd r = prob;  // softmax - e_y
    for (long j = 0; j < n; ++j) r(j, static_cast<long>(y[j])) -= 1.0;
    const MatrixRM g = (r.transpose() * z) * inv_n;  // K x P, row-major = class-major
    *grad = Eigen::Map<const Eigen::VectorXd>(g.data(), static_cast<long>(K) * P) + l2 * x;
  }
  if (hess) {
    const long d = static_cast<long>(K) * P;
    hess->setZero(d, d);
    for (int k = 0; k < K; ++k) {
      for (int l = k; l < K; ++l) {
        const Eigen::VectorXd wt = (prob.col(k).array() * ((k == l ? 1.0 : 0.0) - prob.col(l).array())).matrix() * inv_n;
        const Eigen::MatrixXd block = z.transpose() * wt.asDiagonal() * z;
        hess->block(static_cast<long>(k) * P, static_cast<long>(l) * P, P, P) = block;
        if (l != k) hess->block(static_cast<long>(l) * P, static_cast<long>(k) * P, P, P) = block.transpose();
      }
    }
    hess->diagonal().array() += l2;
  }
}

}  // namespace fedrt::problems
