// Gaussian-mixture oracle and FedEM cores (docs/algorithms.md 1.5, 5).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/algorithms/fedem.h"
#include "fedrt/compression/diana.h"
#include "fedrt/problems/gmm_oracle.h"

namespace fedrt {
namespace {

using algorithms::EmAlgorithm;
using algorithms::EmHyper;
using algorithms::FedEmClient;
using algorithms::FedEmServer;
using problems::GmmOracle;

std::vector<double> Points(int m, int p, uint64_t key, double shift) {
  CounterRng rng(key);
  std::vector<double> y(static_cast<size_t>(m) * p);
  for (size_t i = 0; i < y.size(); ++i) y[i] = 4.0 * rng.uniform() - 2.0 + (i % p == 0 ? shift : 0.0);
  return y;
}

TEST(GmmOracle, ResponsibilitiesSumToOneAndMStepInvertsStatistics) {
  const int G = 3, p = 2, m = 50;
  const auto y = Points(m, p, 1, 0.0);
  auto o = GmmOracle<double>::create(y.data(), m, G, p);
  ASSERT_TRUE(o.ok());
  std::vector<double> theta = {0.2, 0.3, 0.5, -1, 0, 1, 1, 0, -1}, s(o->stat_dim());
  o->mean_stat(theta.data(), s.data());
  EXPECT_NEAR(s[0] + s[1] + s[2], 1.0, 1e-14);  // responsibilities sum to 1 per point
  // T(s) of statistics built from a parameter returns that parameter.
  std::vector<double> s2(9), back(9);
  for (int g = 0; g < G; ++g) {
    s2[g] = theta[g];
    for (int j = 0; j < p; ++j) s2[G + g * p + j] = theta[g] * theta[G + g * p + j];
  }
  problems::GmmMStep(s2.data(), G, p, back.data());
  for (int k = 0; k < 9; ++k) EXPECT_NEAR(back[k], theta[k], 1e-15);
  EXPECT_FALSE(GmmOracle<double>::create(y.data(), m, 0, p).ok());
}

// Without quantization, full participation and gamma = 1, one FedEM iteration
// is exactly one EM iteration: Shat_1 = mean_c sbar_c(T(Shat_0)) (V_0 = mean V_{0,c}
// cancels the V_c's). Naive FedEM gives the same with gamma = 1.
TEST(FedEm, UncompressedFullParticipationStepIsAnEmStep) {
  const int G = 2, p = 2, m = 40, n = 4, dim = G * (1 + p);
  std::vector<std::vector<double>> data;
  std::vector<GmmOracle<double>> oracles;
  for (int c = 0; c < n; ++c) data.push_back(Points(m, p, 10 + c, c % 2 ? 1.5 : -1.5));
  for (int c = 0; c < n; ++c) oracles.push_back(*GmmOracle<double>::create(data[c].data(), m, G, p));
  std::vector<double> theta0 = {0.5, 0.5, -1, 0.3, 1, -0.2}, shat0(dim);
  for (int g = 0; g < G; ++g) {
    shat0[g] = theta0[g];
    for (int j = 0; j < p; ++j) shat0[G + g * p + j] = theta0[g] * theta0[G + g * p + j];
  }
  std::vector<double> em(dim, 0.0), tmp(dim);
  for (int c = 0; c < n; ++c) {
    oracles[c].mean_stat(theta0.data(), tmp.data());
    for (int k = 0; k < dim; ++k) em[k] += tmp[k] / n;
  }
  for (EmAlgorithm alg : {EmAlgorithm::kFedEm, EmAlgorithm::kFedEmNaive, EmAlgorithm::kVrFedEm}) {
    EmHyper<double> h;
    h.algorithm = alg;
    h.step = 1.0;
    std::vector<uint8_t> mem(1 << 14);
    Arena arena(mem.data(), mem.size());
    std::vector<FedEmClient<double>> clients;
    std::vector<compression::CompressedDifference<double>> links;  // V_c: the uplink's memory
    auto server = FedEmServer<double, problems::GmmMStepOf<double>>::create(arena, dim, problems::GmmMStepOf<double>{G, p}, n, h, shat0.data());
    ASSERT_TRUE(server.ok());
    std::vector<double> v0(dim), g(dim), sent(dim);
    for (int c = 0; c < n; ++c) {
      clients.push_back(*FedEmClient<double>::create(arena, dim, h));
      links.push_back(*compression::CompressedDifference<double>::create(arena, dim, h.quantizer,
                                                                       alg != EmAlgorithm::kFedEmNaive));
      clients[c].init(oracles[c], shat0.data(), theta0.data(), v0.data());
      links[c].set_memory(v0.data());
      server->add_initial_control_variate(v0.data());
    }
    server->start_round();
    std::vector<uint8_t> wire(links[0].max_payload_bytes());
    for (int c = 0; c < n; ++c) {
      CounterRng rng(c);
      EXPECT_EQ(clients[c].compute_statistic(oracles[c], server->params(), 0, rng), uint64_t(m));
      for (int k = 0; k < dim; ++k) g[k] = clients[c].statistic()[k] - server->statistic()[k];
      auto sz = links[c].encode(g.data(), rng, wire.data(), wire.size(), sent.data());
      ASSERT_TRUE(sz.ok());
      EXPECT_EQ(*sz, size_t(dim) * 8);
      ASSERT_TRUE(server->receive(wire.data(), *sz).ok());
    }
    server->finish_round();
    // the float32-rounded V_{0,c} are summed exactly as sent, so they cancel
    for (int k = 0; k < dim; ++k) EXPECT_NEAR(server->statistic()[k], em[k], 1e-12) << algorithms::EmAlgorithmName(alg);
  }
}

}  // namespace
}  // namespace fedrt
