// The TD(0) lane kernels (sim/td_lanes.h) against the scalar kernel
// (LsaClient::LocalSteps), bit for bit: every dimension path (8 and 16 at
// compile time, others at run time), with and without SCAFFLSA's control
// variate, groups of 8 and 4 and single agents, and blocks of mixed shapes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/sim/td_lanes.h"

namespace fedrt::sim {
namespace {

using config::ParseTdKernel;
using config::TdKernel;
using config::TdKernelName;

struct Agents {
  std::vector<uint8_t> memory;
  std::vector<problems::TdOracle<double>> oracles;
};

// n random TD(0) oracles of dimension dim (S states, a sparse random joint law).
Agents MakeAgents(int n, int dim, uint64_t seed) {
  constexpr int kStates = 12;
  Agents a;
  a.memory.assign(static_cast<size_t>(n) * (kStates * dim * 8 + kStates * kStates * 40 + 4096), 0);
  Arena arena(a.memory.data(), a.memory.size());
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int c = 0; c < n; ++c) {
    std::vector<double> phi(kStates * dim), reward(kStates), joint(kStates * kStates);
    for (double& v : phi) v = u(gen) / std::sqrt(static_cast<double>(dim));
    for (double& v : reward) v = u(gen);
    for (double& v : joint) v = u(gen) > 0.3 ? u(gen) + 1.0 : 0.0;
    auto o = problems::TdOracle<double>::create(arena, dim, kStates, 0.9, phi.data(), reward.data(), joint.data());
    EXPECT_TRUE(o.ok()) << o.status().message();
    a.oracles.push_back(*o);
  }
  return a;
}

struct Case {
  int dim;
  bool control_variate;
};

class TdLanes : public ::testing::TestWithParam<std::tuple<TdKernel, Case>> {};

TEST_P(TdLanes, EveryAgentEqualsTheScalarKernelBitForBit) {
  const TdKernel kernel = std::get<0>(GetParam());
  const Case cs = std::get<1>(GetParam());
  if (ResolveTdKernel(kernel) != kernel) GTEST_SKIP() << TdKernelName(kernel) << " is not available on this CPU";
  constexpr int kAgents = 15;  // one group of 8, one of 4, three alone
  const int d = cs.dim;
  Agents agents = MakeAgents(kAgents, d, 7 + d);
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> theta0(static_cast<size_t>(kAgents) * d), eta_xi(theta0.size());
  for (double& v : theta0) v = u(gen);
  for (double& v : eta_xi) v = 1e-3 * u(gen);
  const double eta = 0.01;
  const uint32_t H = 257;

  std::vector<double> scalar = theta0, lanes = theta0;
  std::vector<problems::TdBlock<double>> blocks(kAgents);
  for (int c = 0; c < kAgents; ++c) {
    const uint64_t key = RngKey(3, 1, static_cast<uint64_t>(c), 4, RngStream::kLocalSteps);
    const double* exi = cs.control_variate ? eta_xi.data() + c * d : nullptr;
    CounterRng rng(key);
    algorithms::LsaClient<double>::LocalSteps<Eigen::Dynamic>(agents.oracles[c], scalar.data() + c * d, exi, eta, H,
                                                              d, rng);
    blocks[c] = problems::TdBlock<double>{lanes.data() + c * d, exi, &agents.oracles[c], key, H, eta};
  }
  for (size_t b = 0; b < blocks.size(); b += kTdLaneGroup)
    RunTdBlocks(blocks.data() + b, std::min(kTdLaneGroup, blocks.size() - b), kernel);
  for (int c = 0; c < kAgents; ++c)
    EXPECT_EQ(0, std::memcmp(scalar.data() + c * d, lanes.data() + c * d, sizeof(double) * d))
        << "agent " << c << ", d = " << d << ": theta_{t,H} differs from the scalar kernel's";
  EXPECT_NE(0, std::memcmp(theta0.data(), lanes.data(), sizeof(double) * d)) << "the blocks did not run";
}

INSTANTIATE_TEST_SUITE_P(
    KernelsAndShapes, TdLanes,
    ::testing::Combine(::testing::Values(TdKernel::kPortable, TdKernel::kAvx2),
                       ::testing::Values(Case{8, false}, Case{8, true}, Case{16, true}, Case{12, true},
                                         Case{32, false}, Case{128, true}, Case{6, true})),
    [](const auto& info) {
      const Case cs = std::get<1>(info.param);
      return std::string(TdKernelName(std::get<0>(info.param))) + "_d" + std::to_string(cs.dim) +
             (cs.control_variate ? "_scafflsa" : "_fedlsa");
    });

// Blocks of different step counts and algorithms in one call share lanes
// only with their own kind, and each still gets the scalar result.
TEST(TdLanesMixed, BlocksOfDifferentShapesEachGetTheScalarResult) {
  constexpr int kAgents = 13, d = 8;  // 9 SCAFFLSA blocks (a group of 8 and one alone), then 4 FedLSA blocks
  Agents agents = MakeAgents(kAgents, d, 99);
  std::vector<double> theta0(kAgents * d, 0.25), eta_xi(kAgents * d, 1e-4);
  std::vector<double> scalar = theta0, lanes = theta0;
  std::vector<problems::TdBlock<double>> blocks(kAgents);
  for (int c = 0; c < kAgents; ++c) {
    const uint32_t H = c < 9 ? 100 : 60;
    const double* exi = c < 9 ? eta_xi.data() + c * d : nullptr;
    const uint64_t key = RngKey(5, 0, static_cast<uint64_t>(c), 9, RngStream::kLocalSteps);
    CounterRng rng(key);
    algorithms::LsaClient<double>::LocalSteps<8>(agents.oracles[c], scalar.data() + c * d, exi, 0.02, H, d, rng);
    blocks[c] = problems::TdBlock<double>{lanes.data() + c * d, exi, &agents.oracles[c], key, H, 0.02};
  }
  RunTdBlocks(blocks.data(), 8, TdKernel::kAuto);
  RunTdBlocks(blocks.data() + 8, 5, TdKernel::kAuto);
  EXPECT_EQ(0, std::memcmp(scalar.data(), lanes.data(), sizeof(double) * scalar.size()));
}

TEST(TdKernelNames, ParseEveryNameAndRefuseOthers) {
  for (TdKernel k : {TdKernel::kAuto, TdKernel::kScalar, TdKernel::kPortable, TdKernel::kAvx2}) {
    TdKernel parsed = TdKernel::kScalar;
    ASSERT_TRUE(ParseTdKernel(TdKernelName(k), parsed));
    EXPECT_EQ(parsed, k);
  }
  TdKernel parsed;
  EXPECT_FALSE(ParseTdKernel("avx512", parsed));
  EXPECT_NE(ResolveTdKernel(TdKernel::kAuto), TdKernel::kAuto);
}

}  // namespace
}  // namespace fedrt::sim
