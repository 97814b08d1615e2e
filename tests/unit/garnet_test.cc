// Garnet instances for large fleets (runtime/src/problems/garnet.cc): agent
// kernels are regenerated from the seed rather than kept, and derive() spreads
// the agents over threads. Both must leave every number unchanged.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/problems/garnet.h"
#include "fedrt/problems/td_oracles.h"

namespace fedrt::problems {
namespace {

bool SameBits(const Eigen::Ref<const Eigen::MatrixXd>& a, const Eigen::Ref<const Eigen::MatrixXd>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      const double x = a(i, j), y = b(i, j);
      if (std::memcmp(&x, &y, sizeof x) != 0) return false;
    }
  return true;
}

void ExpectSameDerived(const TdProblem& a, const TdProblem& b) {
  ASSERT_EQ(a.agents(), b.agents());
  for (int c = 0; c < a.agents(); ++c) {
    ASSERT_TRUE(SameBits(a.mu[c], b.mu[c])) << "mu of agent " << c;
    ASSERT_TRUE(SameBits(a.lsa.abar[c], b.lsa.abar[c])) << "Abar of agent " << c;
    ASSERT_TRUE(SameBits(a.lsa.bbar[c], b.lsa.bbar[c])) << "bbar of agent " << c;
  }
  EXPECT_TRUE(SameBits(a.lsa.theta_star, b.lsa.theta_star));
}

GarnetConfig Fleet(Heterogeneity h) {
  GarnetConfig g;
  g.agents = 1100;  // above the 512 agents per thread of derive(0)
  g.heterogeneity = h;
  g.seed = 5;
  return g;
}

// Low heterogeneity: agent c's rewards r0(s) + eps u take the draws of its
// stream that follow its kernel's (one per non-zero entry: |S| |A| b), so
// r_c(s) - eps u_{c,s} is the same r0(s) for every agent.
TEST(Garnet, LowHeterogeneityRewardsFollowTheKernelDraws) {
  GarnetConfig g = Fleet(Heterogeneity::kLow);
  g.agents = 20;
  g.epsilon = 0.3;
  auto p = GenerateGarnet(g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<double> r0;
  for (int c = 0; c < g.agents; ++c) {
    CounterRng rng(g.seed, 0, static_cast<uint64_t>(c), 0, RngStream::kProblem);
    for (int k = 0; k < g.n_states * g.n_actions * g.branching; ++k) rng.uniform();
    for (int s = 0; s < g.n_states; ++s) {
      const double base = p->reward[c](s) - g.epsilon * rng.uniform();
      if (c == 0) r0.push_back(base);
      else ASSERT_NEAR(base, r0[s], 1e-12) << "agent " << c << " state " << s;
    }
  }
}

// Regenerated kernels are stochastic, deterministic, and the base kernel's
// support: b successors per (s, a).
TEST(Garnet, RegeneratedKernelsAreStochasticAndRepeatable) {
  auto p = GenerateGarnet(Fleet(Heterogeneity::kLow));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->kernel.empty());  // not kept
  const int n = p->n_states, na = p->n_actions;
  for (int c : {0, 1, 777, 1099}) {
    const std::vector<double> k = p->agent_kernel(c);
    ASSERT_EQ(k, p->agent_kernel(c));
    ASSERT_EQ(k.size(), static_cast<size_t>(n) * na * n);
    for (int row = 0; row < n * na; ++row) {
      double sum = 0.0;
      int support = 0;
      for (int s2 = 0; s2 < n; ++s2) {
        sum += k[static_cast<size_t>(row) * n + s2];
        support += k[static_cast<size_t>(row) * n + s2] > 0.0;
      }
      EXPECT_NEAR(sum, 1.0, 1e-12);
      EXPECT_EQ(support, 2);
    }
  }
  EXPECT_NE(p->agent_kernel(0), p->agent_kernel(1));  // each agent its own perturbation
}

// The same derived quantities from kept kernels (the bundle path) as from
// regenerated ones, and from 1 thread as from several.
TEST(Garnet, DeriveIsTheSameKeptOrRegeneratedAndOnAnyThreads) {
  for (Heterogeneity h : {Heterogeneity::kLow, Heterogeneity::kHigh}) {
    auto p = GenerateGarnet(Fleet(h));  // derive(0): the machine's threads
    ASSERT_TRUE(p.ok()) << p.status().message();
    TdProblem kept = *p;
    kept.kernel_generator = nullptr;
    for (int c = 0; c < p->agents(); ++c) kept.kernel.push_back(p->agent_kernel(c));
    ASSERT_TRUE(kept.derive(1).ok());
    ExpectSameDerived(*p, kept);
    TdProblem three = *p;
    ASSERT_TRUE(three.derive(3).ok());
    ExpectSameDerived(*p, three);
  }
}

// The alias tables built on threads are create_shared's, byte for byte,
// whatever the thread count.
TEST(Garnet, OracleTablesOnThreadsAreTheSerialOnes) {
  auto p = GenerateGarnet(Fleet(Heterogeneity::kLow));
  ASSERT_TRUE(p.ok()) << p.status().message();
  TdOracleTables one, three;
  ASSERT_TRUE(BuildTdOracles(*p, 1, one).ok());
  ASSERT_TRUE(BuildTdOracles(*p, 3, three).ok());
  ASSERT_EQ(one.oracles.size(), static_cast<size_t>(p->agents()));
  EXPECT_EQ(one.max_atoms, three.max_atoms);
  std::vector<uint8_t> mem(1 << 16);
  for (int c = 0; c < p->agents(); ++c) {
    Arena arena(mem.data(), mem.size());
    const std::vector<double> joint = p->joint_law(c);
    auto serial = TdOracle<double>::create_shared(arena, p->dim, p->n_states, p->gamma, p->phi.data(),
                                                  p->reward[c].data(), joint.data());
    ASSERT_TRUE(serial.ok());
    for (const TdOracleTables* t : {&one, &three}) {
      const TdOracle<double>& o = t->oracles[c];
      ASSERT_EQ(o.atoms(), serial->atoms()) << "agent " << c;
      ASSERT_EQ(o.features(), p->phi.data());
      ASSERT_EQ(0, std::memcmp(o.alias_table(), serial->alias_table(), sizeof(TdTransition<double>) * o.atoms()))
          << "agent " << c;
      ASSERT_GE(reinterpret_cast<const uint8_t*>(o.alias_table()), t->memory.data());
      ASSERT_LE(reinterpret_cast<const uint8_t*>(o.alias_table() + o.atoms()), t->memory.data() + t->memory.size());
    }
  }
}

}  // namespace
}  // namespace fedrt::problems
