#include "fedrt/problems/td_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <Eigen/Eigenvalues>
#include <fmt/format.h>

#include "fedrt/core/worker_pool.h"

namespace fedrt::problems {

Status LsaSystem::solve() {
  const int n = agents();
  if (n == 0) return Status::InvalidArgument("LSA system has no agents");
  MatrixRM a_sum = MatrixRM::Zero(dim, dim);
  Eigen::VectorXd b_sum = Eigen::VectorXd::Zero(dim);
  theta_c.assign(n, Eigen::VectorXd::Constant(dim, std::numeric_limits<double>::quiet_NaN()));
  for (int c = 0; c < n; ++c) {
    a_sum += abar[c];
    b_sum += bbar[c];
    if (auto x = SolveIfRegular(abar[c], bbar[c])) theta_c[c] = *x;
  }
  auto x = SolveIfRegular(a_sum, b_sum);
  if (!x) {
    return Status(StatusCode::kFailedPrecondition,
                  std::string("sum_c Abar_c is singular: the federated LSA problem has no unique solution"));
  }
  theta_star = *x;
  return Status::Ok();
}

Eigen::VectorXd StationaryDistribution(const MatrixRM& p) {
  const int n = static_cast<int>(p.rows());
  Eigen::EigenSolver<Eigen::MatrixXd> es(p.transpose());
  int best = 0;
  double best_gap = std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    const double gap = std::abs(es.eigenvalues()[i] - std::complex<double>(1.0, 0.0));
    if (gap < best_gap) {
      best_gap = gap;
      best = i;
    }
  }
  Eigen::VectorXd mu = es.eigenvectors().col(best).real().cwiseAbs();
  mu /= mu.sum();
  const double residual = (p.transpose() * mu - mu).cwiseAbs().maxCoeff();
  if (std::isfinite(residual) && residual < 1e-10) return mu;
  // Repeated eigenvalue 1 (several closed classes) or a degenerate solve:
  // Cesaro average of the chain from the uniform law.
  Eigen::RowVectorXd x = Eigen::RowVectorXd::Constant(n, 1.0 / n);
  Eigen::RowVectorXd avg = Eigen::RowVectorXd::Zero(n);
  const int iters = 20000;
  for (int k = 0; k < iters; ++k) {
    x = x * p;
    avg += x;
  }
  return (avg / avg.sum()).transpose();
}

MatrixRM TdProblem::policy_kernel(int agent) const {
  const int n = n_states, na = n_actions;
  MatrixRM pp = MatrixRM::Zero(n, n);
  const std::vector<double> k = agent_kernel(agent);
  for (int s = 0; s < n; ++s)
    for (int a = 0; a < na; ++a) {
      const double w = policy(s, a);
      if (w == 0.0) continue;
      for (int s2 = 0; s2 < n; ++s2) pp(s, s2) += w * k[(static_cast<size_t>(s) * na + a) * n + s2];
    }
  return pp;
}

namespace {

// mu_c, Abar_c and bbar_c of agent c (derive's body; agents in parallel).
void DeriveAgent(TdProblem& p, int c) {
  const int n = p.n_states;
  const MatrixRM& phi = p.phi;
  const double gamma = p.gamma;
  std::vector<Eigen::VectorXd>& mu = p.mu;
  const std::vector<Eigen::VectorXd>& reward = p.reward;
  LsaSystem& lsa = p.lsa;
  const MatrixRM pp = p.policy_kernel(c);
  mu[c] = StationaryDistribution(pp);
  // Abar_c = sum_s mu(s) phi(s) (phi(s) - gamma sum_s' P(s,s') phi(s'))^T
  const MatrixRM next_phi = pp * phi;  // row s: E[phi(s') | s]
  MatrixRM& abar = lsa.abar[c];
  Eigen::VectorXd& bbar = lsa.bbar[c];
  for (int s = 0; s < n; ++s) {
    const double m = mu[c](s);
    if (m == 0.0) continue;
    const Eigen::RowVectorXd diff = phi.row(s) - gamma * next_phi.row(s);
    abar.noalias() += m * phi.row(s).transpose() * diff;
    bbar += (m * reward[c](s)) * phi.row(s).transpose();
  }
}

}  // namespace

Status TdProblem::derive(int threads) {
  const int n = n_states, d = dim;
  const int agents_n = agents();
  mu.assign(agents_n, Eigen::VectorXd::Zero(n));
  lsa = LsaSystem{};
  lsa.dim = d;
  lsa.abar.assign(agents_n, MatrixRM::Zero(d, d));
  lsa.bbar.assign(agents_n, Eigen::VectorXd::Zero(d));
  // One eigen-solve per agent, the cost of building a large fleet; solve()
  // then sums the agents in order.
  WorkerPool pool(WorkerPool::ThreadsFor(static_cast<size_t>(agents_n), threads, 512));
  pool.parallel_for(static_cast<size_t>(agents_n), [this](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) DeriveAgent(*this, static_cast<int>(c));
  });
  return lsa.solve();
}

std::vector<double> TdProblem::joint_law(int agent) const {
  std::vector<double> j(static_cast<size_t>(n_states) * n_states);
  const MatrixRM pp = policy_kernel(agent);
  for (int s = 0; s < n_states; ++s)
    for (int s2 = 0; s2 < n_states; ++s2) j[static_cast<size_t>(s) * n_states + s2] = mu[agent](s) * pp(s, s2);
  return j;
}

namespace {

// abar (N x d x d), bbar (N x d), sigma_a and sigma_b (N, optional).
Result<TdProblem> LinearSystemFromBundle(const ArrayBundle& bundle) {
  const std::string& src = bundle.source();
  for (const std::string& name : bundle.names())
    if (name != "abar" && name != "bbar" && name != "sigma_a" && name != "sigma_b")
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: array '{}' is not part of a linear system (abar, bbar, sigma_a, sigma_b)", src, name));
  auto a_r = bundle.get("abar", {-1, -1, -1});
  if (!a_r.ok()) return a_r.status();
  const int n = static_cast<int>((*a_r)->shape[0]), d = static_cast<int>((*a_r)->shape[1]);
  if ((*a_r)->shape[2] != static_cast<size_t>(d))
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: array 'abar' must be N x d x d (one square matrix per agent), got {}", src,
                              ShapeString((*a_r)->shape)));
  auto b_r = bundle.get("bbar", {n, d});
  if (!b_r.ok()) return b_r.status();
  TdProblem p;
  p.dim = d;
  p.lsa.dim = d;
  for (int c = 0; c < n; ++c) {
    p.lsa.abar.emplace_back(Eigen::Map<const MatrixRM>((*a_r)->values.data() + static_cast<size_t>(c) * d * d, d, d));
    p.lsa.bbar.emplace_back(Eigen::Map<const Eigen::VectorXd>((*b_r)->values.data() + static_cast<size_t>(c) * d, d));
  }
  for (auto [name, out] : {std::pair<const char*, std::vector<double>*>{"sigma_a", &p.sigma_a}, {"sigma_b", &p.sigma_b}}) {
    out->assign(static_cast<size_t>(n), 0.0);
    if (!bundle.has(name)) continue;
    auto s_r = bundle.get(name, {n});
    if (!s_r.ok()) return s_r.status();
    *out = (*s_r)->values;
    for (int c = 0; c < n; ++c)
      if ((*out)[static_cast<size_t>(c)] < 0.0)
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("{}: array '{}' agent {}: a noise level must not be negative, got {}", src, name, c,
                                  (*out)[static_cast<size_t>(c)]));
  }
  Status st = p.lsa.solve();
  if (!st.ok()) return Status(st.code(), fmt::format("{}: {}", src, st.message()));
  return p;
}

}  // namespace

Result<TdProblem> TdProblem::from_bundle(const ArrayBundle& bundle) {
  if (bundle.has("abar") || bundle.has("bbar")) return LinearSystemFromBundle(bundle);
  TdProblem p;
  const std::string& src = bundle.source();
  auto gamma_r = bundle.get("gamma", {});
  if (!gamma_r.ok()) return gamma_r.status();
  p.gamma = (*gamma_r)->values[0];
  if (!(p.gamma >= 0.0 && p.gamma < 1.0)) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: array 'gamma' must be a discount factor in [0, 1), got {}", src, p.gamma));
  }
  auto phi_r = bundle.get("feat_map", {-1, -1});
  if (!phi_r.ok()) return phi_r.status();
  p.n_states = static_cast<int>((*phi_r)->shape[0]);
  p.dim = static_cast<int>((*phi_r)->shape[1]);
  if (p.n_states > 65535) {
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: array 'feat_map' has too many states", src));
  }
  auto pol_r = bundle.get("policy", {p.n_states, -1});
  if (!pol_r.ok()) return pol_r.status();
  p.n_actions = static_cast<int>((*pol_r)->shape[1]);
  auto rew_r = bundle.get("rewards", {-1, p.n_states});
  if (!rew_r.ok()) return rew_r.status();
  const int agents_n = static_cast<int>((*rew_r)->shape[0]);
  auto ker_r = bundle.get("tr_kernels", {agents_n, p.n_states, p.n_actions, p.n_states});
  if (!ker_r.ok()) return ker_r.status();

  p.phi = Eigen::Map<const MatrixRM>((*phi_r)->values.data(), p.n_states, p.dim);
  p.policy = Eigen::Map<const MatrixRM>((*pol_r)->values.data(), p.n_states, p.n_actions);
  for (int s = 0; s < p.n_states; ++s) {
    const double row = p.policy.row(s).sum();
    if (std::abs(row - 1.0) > 1e-9 || p.policy.row(s).minCoeff() < 0.0) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: array 'policy' row {} is not a probability vector (sums to {})", src, s, row));
    }
  }
  const size_t per_agent = static_cast<size_t>(p.n_states) * p.n_actions * p.n_states;
  for (int c = 0; c < agents_n; ++c) {
    p.reward.emplace_back(Eigen::Map<const Eigen::VectorXd>((*rew_r)->values.data() + static_cast<size_t>(c) * p.n_states,
                                                            p.n_states));
    const double* k = (*ker_r)->values.data() + c * per_agent;
    p.kernel.emplace_back(k, k + per_agent);
    for (size_t row = 0; row < static_cast<size_t>(p.n_states) * p.n_actions; ++row) {
      double sum = 0.0, mn = 0.0;
      for (int s2 = 0; s2 < p.n_states; ++s2) {
        sum += k[row * p.n_states + s2];
        mn = std::min(mn, k[row * p.n_states + s2]);
      }
      if (std::abs(sum - 1.0) > 1e-9 || mn < 0.0) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("{}: array 'tr_kernels' agent {} state {} action {} is not a probability vector "
                                  "(sums to {})",
                                  src, c, row / p.n_actions, row % p.n_actions, sum));
      }
    }
  }
  Status st = p.derive();
  if (!st.ok()) return Status(st.code(), fmt::format("{}: {}", src, st.message()));
  return p;
}

}  // namespace fedrt::problems
