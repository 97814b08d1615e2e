#include "fedrt/analysis/fedlsa_bias.h"

namespace fedrt::analysis {

using problems::MatrixRM;

// (G_m, S_m) combine as G_{m+n} = G_m G_n, S_{m+n} = S_m + G_m S_n.
void PowerAndSeries(const MatrixRM& a, double eta, long h, MatrixRM& g, MatrixRM& s) {
  const int d = static_cast<int>(a.rows());
  const MatrixRM id = MatrixRM::Identity(d, d);
  MatrixRM base_g = id - eta * a, base_s = id;  // m = 1
  g = id;
  s = MatrixRM::Zero(d, d);
  while (h > 0) {
    if (h & 1) {
      s = s + g * base_s;
      g = g * base_g;
    }
    h >>= 1;
    if (h) {
      base_s = base_s + base_g * base_s;
      base_g = base_g * base_g;
    }
  }
}

FedLsaBias PredictFedLsaBias(const problems::LsaSystem& lsa, double eta, long local_steps, long rounds) {
  const int d = lsa.dim;
  const int n = lsa.agents();
  FedLsaBias out;
  out.rho = Eigen::VectorXd::Zero(d);
  out.g_bar = MatrixRM::Zero(d, d);
  MatrixRM g, s;
  for (int c = 0; c < n; ++c) {
    PowerAndSeries(lsa.abar[c], eta, local_steps, g, s);
    out.g_bar += g;
    if (lsa.theta_c.size() == static_cast<size_t>(n) && lsa.theta_c[c].allFinite()) {
      const Eigen::VectorXd diff = lsa.theta_c[c] - lsa.theta_star;
      out.rho += diff - g * diff;  // (I - G_c)(theta_c - theta_star), docs/algorithms.md 6
    } else {
      // Abar_c singular: (I - G_c) theta_c = eta S_c bbar_c still holds.
      out.rho += eta * (s * lsa.bbar[c]) - (lsa.theta_star - g * lsa.theta_star);
    }
  }
  out.g_bar /= n;
  out.rho /= n;
  Eigen::VectorXd b = Eigen::VectorXd::Zero(d);
  for (long t = 0; t < rounds; ++t) b = out.g_bar * b + out.rho;
  out.after_rounds = b;
  out.stationary = (MatrixRM::Identity(d, d) - out.g_bar).partialPivLu().solve(out.rho);
  return out;
}

double DeltaHet(const problems::LsaSystem& lsa) {
  double sum = 0.0;
  for (int c = 0; c < lsa.agents(); ++c) sum += (lsa.theta_star - lsa.theta_c[c]).norm();
  return sum / lsa.agents();
}

}  // namespace fedrt::analysis
