#include "fedrt/problems/garnet.h"

#include <memory>
#include <numeric>
#include <vector>

#include "fedrt/core/rng.h"

namespace fedrt::problems {
namespace {

// Stream ids (the `agent` coordinate of the problem RNG) of shared draws.
constexpr uint64_t kShared = uint64_t(1) << 40;

// Base kernel: for each (s, a), `b` distinct successors uniformly at random, weight 1 each.
std::vector<double> BaseKernel(const GarnetConfig& g, CounterRng& rng) {
  const int n = g.n_states, na = g.n_actions;
  std::vector<double> k(static_cast<size_t>(n) * na * n, 0.0);
  std::vector<int> perm(n);
  for (int s = 0; s < n; ++s)
    for (int a = 0; a < na; ++a) {
      std::iota(perm.begin(), perm.end(), 0);
      for (int j = 0; j < g.branching; ++j) {  // partial Fisher-Yates
        const int r = j + static_cast<int>(rng.below(static_cast<uint32_t>(n - j)));
        std::swap(perm[j], perm[r]);
        k[(static_cast<size_t>(s) * na + a) * n + perm[j]] = 1.0 / g.branching;
      }
    }
  return k;
}

// Adds U[0, eps) to the non-zero entries and row-normalises.
std::vector<double> Perturb(const std::vector<double>& base, const GarnetConfig& g, double eps, CounterRng& rng) {
  std::vector<double> k = base;
  const int n = g.n_states;
  for (size_t row = 0; row < k.size() / n; ++row) {
    double sum = 0.0;
    for (int s2 = 0; s2 < n; ++s2) {
      double& v = k[row * n + s2];
      if (v != 0.0) v += eps * rng.uniform();
      sum += v;
    }
    for (int s2 = 0; s2 < n; ++s2) k[row * n + s2] /= sum;
  }
  return k;
}

}  // namespace

Result<TdProblem> GenerateGarnet(const GarnetConfig& g) {
  if (g.agents <= 0) return Status::InvalidArgument("garnet: the number of agents must be positive");
  if (g.n_states < 2 || g.n_states > 65535) return Status::InvalidArgument("garnet: states must be in [2, 65535]");
  if (g.n_actions < 1) return Status::InvalidArgument("garnet: actions must be positive");
  if (g.branching < 1 || g.branching > g.n_states)
    return Status::InvalidArgument("garnet: branching must be in [1, states]");
  if (g.dim < 1) return Status::InvalidArgument("garnet: feature dimension must be positive");
  if (!(g.gamma >= 0.0 && g.gamma < 1.0)) return Status::InvalidArgument("garnet: gamma must be in [0, 1)");
  if (!(g.epsilon >= 0.0)) return Status::InvalidArgument("garnet: epsilon must be non-negative");

  TdProblem p;
  p.n_states = g.n_states;
  p.n_actions = g.n_actions;
  p.dim = g.dim;
  p.gamma = g.gamma;
  CounterRng shared(g.seed, 0, kShared, 0, RngStream::kProblem);
  // Features phi(s) = u / sum(u), u ~ U[0,1)^d.
  p.phi = MatrixRM(g.n_states, g.dim);
  for (int s = 0; s < g.n_states; ++s) {
    double sum = 0.0;
    for (int i = 0; i < g.dim; ++i) sum += (p.phi(s, i) = shared.uniform());
    p.phi.row(s) /= sum;
  }
  // Deterministic policy: a uniformly random action per state.
  p.policy = MatrixRM::Zero(g.n_states, g.n_actions);
  for (int s = 0; s < g.n_states; ++s) p.policy(s, shared.below(static_cast<uint32_t>(g.n_actions))) = 1.0;
  // Base rewards r0(s) ~ U[0,1) and base kernels.
  Eigen::VectorXd r0(g.n_states);
  for (int s = 0; s < g.n_states; ++s) r0(s) = shared.uniform();
  CounterRng k0_rng(g.seed, 0, kShared + 1, 0, RngStream::kProblem);
  CounterRng k1_rng(g.seed, 0, kShared + 2, 0, RngStream::kProblem);
  auto k0 = std::make_shared<const std::vector<double>>(BaseKernel(g, k0_rng));
  auto k1 = g.heterogeneity == Heterogeneity::kHigh
                ? std::make_shared<const std::vector<double>>(BaseKernel(g, k1_rng)) : k0;
  // Agent c's kernel: its base kernel perturbed by the first draws of its own
  // stream. Regenerated when asked rather than kept (n^2 |A| doubles each).
  auto kernel_of = [g, k0, k1](int c, CounterRng& rng) {
    if (g.heterogeneity == Heterogeneity::kLow) return Perturb(*k0, g, g.epsilon, rng);
    return Perturb(c % 2 == 0 ? *k0 : *k1, g, 0.02, rng);
  };
  p.kernel_generator = [g, kernel_of](int c) {
    CounterRng rng(g.seed, 0, static_cast<uint64_t>(c), 0, RngStream::kProblem);
    return kernel_of(c, rng);
  };

  p.reward.reserve(static_cast<size_t>(g.agents));
  for (int c = 0; c < g.agents; ++c) {
    if (g.heterogeneity == Heterogeneity::kLow) {
      // The rewards' draws follow the kernel's in the agent's stream: one
      // uniform per non-zero entry, `branching` per (s, a) row.
      CounterRng rng(g.seed, 0, static_cast<uint64_t>(c), 0, RngStream::kProblem);
      rng.advance(static_cast<uint64_t>(g.n_states) * g.n_actions * g.branching);
      Eigen::VectorXd r(g.n_states);
      for (int s = 0; s < g.n_states; ++s) r(s) = r0(s) + g.epsilon * rng.uniform();
      p.reward.push_back(r);
    } else {
      p.reward.push_back(c % 2 == 0 ? r0 : Eigen::VectorXd(-r0));
    }
  }
  Status st = p.derive();
  if (!st.ok()) return st;
  return p;
}

}  // namespace fedrt::problems
