#pragma once
// Federated TD(0) with linear features (docs/algorithms.md 1.2): N agents' MDPs
// sharing features phi and policy pi, and everything derived from them:
// P^pi_c, the stationary law mu_c, Abar_c, bbar_c, theta_c, theta_star. Host only.

#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/core/status.h"
#include "fedrt/problems/array_bundle.h"
#include "fedrt/problems/lsa_system.h"

namespace fedrt::data {
struct Shard;
}

namespace fedrt::problems {

struct TdProblem {
  int n_states = 0;
  int n_actions = 0;
  int dim = 0;
  double gamma = 0.0;
  MatrixRM phi;     // n_states x dim, phi(s) as rows
  MatrixRM policy;  // n_states x n_actions, pi(a | s)
  std::vector<Eigen::VectorXd> reward;  // r_c(s)
  // P_c(s' | s, a), flat [s][a][s']: kept per agent (read from a bundle), or
  // empty with kernel_generator set (Garnet regenerates agent c's kernel from
  // its seed when asked: n^2 |A| doubles per agent are not kept, so fleets of
  // 10^6 agents fit in memory).
  std::vector<std::vector<double>> kernel;
  std::function<std::vector<double>(int agent)> kernel_generator;

  // P_c of agent c, flat [s][a][s'] (kept or regenerated).
  std::vector<double> agent_kernel(int agent) const {
    return kernel.empty() ? kernel_generator(agent) : kernel[static_cast<size_t>(agent)];
  }

  // Derived by derive():
  std::vector<Eigen::VectorXd> mu;   // stationary law of P^pi_c
  LsaSystem lsa;                     // Abar_c, bbar_c, theta_c, theta_star

  // A federated linear system given directly (docs/algorithms.md 1.1): no
  // MDP (n_states = 0), lsa's Abar_c and bbar_c as given, and agent c's
  // samples A_c(Z) = Abar_c + sigma_a[c] G, b_c(Z) = bbar_c + sigma_b[c] g
  // with standard Gaussian G, g (sigma 0: the expected operator itself).
  std::vector<double> sigma_a, sigma_b;
  bool linear_system() const { return n_states == 0; }

  int agents() const { return linear_system() ? lsa.agents() : static_cast<int>(reward.size()); }

  // P^pi_c(s, s') = sum_a pi(a|s) P_c(s'|s,a), n x n (computed when asked:
  // kept for every agent it would cost n^2 doubles each).
  MatrixRM policy_kernel(int agent) const;

  // Computes mu, Abar_c = sum_{s,s'} mu(s) P^pi(s,s') phi(s)(phi(s) - gamma phi(s'))^T,
  // bbar_c = sum_s mu(s) r_c(s) phi(s), then theta_c and theta_star. The
  // agents are spread over `threads` threads (0: the machine's, for fleets
  // above 512 agents); every number is the same for any count.
  Status derive(int threads = 0);

  // Joint law of Z = (s, s') of agent c: mu_c(s) P^pi_c(s, s'), row-major n x n.
  std::vector<double> joint_law(int agent) const;

  // Reads the primitive arrays (gamma, feat_map, policy, rewards, tr_kernels)
  // of an array bundle and derives the rest; or, when the bundle holds
  // `abar` (N x d x d), a linear system: abar, bbar (N x d) and the optional
  // noise levels sigma_a, sigma_b (N each, default 0). Errors name the
  // missing or mis-shaped array.
  static Result<TdProblem> from_bundle(const ArrayBundle& bundle);
};

// Stationary distribution of a row-stochastic matrix: the eigenvector of
// eigenvalue 1 of P^T, absolute value, normalised to sum 1 (as the reference
// generator does); if that is not stationary to 1e-10 (eigenvalue 1 repeated),
// the Cesaro average of the chain started from the uniform law.
Eigen::VectorXd StationaryDistribution(const MatrixRM& p);

// A shard of TD(0) transitions (docs/data.md): 2p feature columns, phi(s)
// then phi(s') named next_<name> in the same order, the reward as the label,
// at most kMaxTransitions rows. Errors name the file and the column.
Status CheckTransitionColumns(const data::Shard& shard);

}  // namespace fedrt::problems
