// Compressed uplink (and downlink) for the optimisation family: the client
// hook that makes Scaffold's c_c follow the decoded dc, the
// DIANA argument on FedAvg and Scaffold with full gradients, exact bit
// accounting, and determinism across thread counts.

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/algorithms/fedopt.h"
#include "fedrt/analysis/fedopt_theory.h"
#include "fedrt/compression/diana.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/sim/simulator.h"
#include "heterogeneous_lsq.h"

namespace fedrt {
namespace {

using algorithms::FedOptAlgorithm;
using algorithms::FedOptClient;
using algorithms::FedOptHyper;
using algorithms::FedOptServer;
using config::ExperimentConfig;
using task::ProblemKind;

// The setting of fedopt_test.cc, shorter.
ExperimentConfig ShortHeterogeneousLsq() { return HeterogeneousLsqSetting(600); }

void Dither(ExperimentConfig& c, uint32_t levels, bool cv) {
  c.compression.quantizer.kind = compression::QuantizerKind::kDither;
  c.compression.quantizer.levels = levels;
  c.compression.control_variates = cv;
}

// Three least-squares agents with different data, d = 3.
struct TinyFleet {
  static constexpr int kDim = 3;
  static constexpr int kAgents = 3;
  static constexpr uint32_t kSamples = 4;
  double x[kAgents][kSamples * kDim];
  double y[kAgents][kSamples];
  alignas(64) uint8_t mem[1 << 14];
  Arena arena{mem, sizeof(mem)};
  std::vector<problems::LeastSquaresOracle<double>> oracles;
  TinyFleet() {
    for (int c = 0; c < kAgents; ++c) {
      for (uint32_t j = 0; j < kSamples; ++j) {
        for (int k = 0; k < kDim; ++k) x[c][j * kDim + k] = (static_cast<int>(j * 5 + k * 3 + c * 7) % 9 - 4) / 4.0 + (static_cast<int>(j) == k);
        y[c][j] = 0.3 * c - 0.2 * j + 0.1;
      }
      oracles.push_back(*problems::LeastSquaresOracle<double>::create(arena, kDim, kSamples, x[c], y[c], 1.0));
    }
  }
};

// Committing the update itself is the uncompressed path (c_c <- c_c + dc).
TEST(FedOptCompression, CommittingTheUpdateItselfChangesNothing) {
  TinyFleet f;
  FedOptHyper<double> h;
  h.algorithm = FedOptAlgorithm::kScaffold;
  h.step_size = 0.05;
  h.local_steps = 4;
  const double x0[TinyFleet::kDim] = {0, 0, 0};
  FedOptClient<double> a = *FedOptClient<double>::create(f.arena, TinyFleet::kDim, h);
  FedOptClient<double> b = *FedOptClient<double>::create(f.arena, TinyFleet::kDim, h);
  FedOptServer<double> server = *FedOptServer<double>::create(f.arena, TinyFleet::kDim, h, x0, 1);
  std::vector<double> copy(2 * TinyFleet::kDim);
  for (uint32_t t = 0; t < 6; ++t) {
    const algorithms::RoundPlan plan = server.start_round(t);
    a.begin_round(server.broadcast(), plan);
    b.begin_round(server.broadcast(), plan);
    CounterRng ra(1, 0, 0, t, RngStream::kLocalSteps), rb(1, 0, 0, t, RngStream::kLocalSteps);
    a.run_local_steps(f.oracles[0], ra);
    b.run_local_steps(f.oracles[0], rb);
    copy.assign(b.update(), b.update() + b.update_dim());
    a.commit(a.update());
    b.commit(copy.data());
    for (int i = 0; i < a.update_dim(); ++i) ASSERT_EQ(a.update()[i], b.update()[i]);
    for (int i = 0; i < TinyFleet::kDim; ++i) ASSERT_EQ(a.control_variate()[i], b.control_variate()[i]);
    server.accumulate(a.update());
    server.finish_round();
  }
}

// With a dithered uplink, every agent's c_c is c_c^prev + the dc the server
// decoded, so mean_c c_c equals the server's c (full participation), and both
// ends of each link hold the same V_c.
TEST(FedOptCompression, ScaffoldControlVariatesFollowTheDecodedUpdate) {
  TinyFleet f;
  constexpr int d = TinyFleet::kDim, n = TinyFleet::kAgents;
  FedOptHyper<double> h;
  h.algorithm = FedOptAlgorithm::kScaffold;
  h.step_size = 0.05;
  h.local_steps = 4;
  compression::QuantizerSpec q;
  q.kind = compression::QuantizerKind::kDither;
  q.levels = 2;
  const double x0[d] = {0, 0, 0};
  std::vector<FedOptClient<double>> clients;
  std::vector<compression::CompressedDifference<double>> up, down;
  for (int c = 0; c < n; ++c) {
    clients.push_back(*FedOptClient<double>::create(f.arena, d, h));
    up.push_back(*compression::CompressedDifference<double>::create(f.arena, 2 * d, q, true));
    down.push_back(*compression::CompressedDifference<double>::create(f.arena, 2 * d, q, true));
  }
  FedOptServer<double> server = *FedOptServer<double>::create(f.arena, d, h, x0, n);
  uint8_t wire[256];
  double sent[2 * d], recon[2 * d];
  double max_quant_error = 0;
  for (uint32_t t = 0; t < 20; ++t) {
    const algorithms::RoundPlan plan = server.start_round(t);
    for (int c = 0; c < n; ++c) {
      clients[c].begin_round(server.broadcast(), plan);
      CounterRng rng(1, 0, c, t, RngStream::kLocalSteps), crng(1, 0, c, t, RngStream::kCompression);
      clients[c].run_local_steps(f.oracles[c], rng);
      double u[2 * d];
      std::copy(clients[c].update(), clients[c].update() + 2 * d, u);
      auto bytes = up[c].encode(u, crng, wire, sizeof(wire), sent);
      ASSERT_TRUE(bytes.ok());
      ASSERT_TRUE(down[c].decode(wire, *bytes, recon).ok());
      up[c].commit();  // the server took the message
      clients[c].commit(sent);
      for (int i = 0; i < 2 * d; ++i) {
        ASSERT_EQ(recon[i], sent[i]);
        ASSERT_EQ(up[c].memory()[i], down[c].memory()[i]);
        max_quant_error = std::max(max_quant_error, std::fabs(recon[i] - u[i]));
      }
      server.accumulate(recon);
    }
    server.finish_round();
    for (int i = 0; i < d; ++i) {
      double mean = 0;
      for (int c = 0; c < n; ++c) mean += clients[c].control_variate()[i] / n;
      EXPECT_NEAR(mean, server.broadcast()[d + i], 1e-12) << "round " << t << " coordinate " << i;
    }
  }
  EXPECT_GT(max_quant_error, 1e-3);  // the quantizer really changed the updates
}

// Full gradients, dithering s = 4: the updates u_c -> 0 at Scaffold's fixed
// point x_star, so the quantization error (relative to ||u_c - V_c||) vanishes
// and Scaffold still converges to x_star, with or without control variates.
TEST(FedOptCompression, ScaffoldWithDitheringConvergesToXStar) {
  for (bool cv : {true, false}) {
    ExperimentConfig c = ShortHeterogeneousLsq();
    c.algorithms = {"scaffold"};
    Dither(c, 4, cv);
    auto r = sim::RunExperiment(c);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double err = r->algorithms[0].error[0].back();
    const double err0 = r->algorithms[0].error[0][0];
    std::printf("scaffold dither s=4 cv=%d: ||x_T - x*||^2 = %.3e (start %.3e)\n", cv, err, err0);
    EXPECT_LT(err, 1e-20 * err0) << "cv=" << cv;
  }
}

// FedAvg at its fixed point x_FA: mean_c dx_c = 0 but each dx_c != 0
// (heterogeneity). Plain Q(dx_c) keeps a noise floor around x_FA; with control
// variates V_c -> dx_c, the compressed differences vanish and FedAvg reaches
// x_FA itself (the DIANA argument).
TEST(FedOptCompression, FedAvgControlVariatesRemoveTheCompressionFloor) {
  double dist[2];
  for (int cv = 0; cv < 2; ++cv) {
    ExperimentConfig c = ShortHeterogeneousLsq();
    c.algorithms = {"fedavg"};
    Dither(c, 4, cv == 1);
    auto r = sim::RunExperiment(c);
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto data = sim::BuildFedData(c);
    auto lsq = problems::LeastSquaresSystem(*data);
    auto point = analysis::FedAvgFixedPoint(*lsq, c.step, c.local_steps);
    ASSERT_TRUE(point.ok());
    dist[cv] = (r->algorithms[0].final_theta[0] - *point).norm() / point->norm();
    std::printf("fedavg dither s=4 cv=%d: ||x_T - x_FA|| / ||x_FA|| = %.3e\n", cv, dist[cv]);
  }
  EXPECT_LT(dist[1], 1e-10);  // exact up to round-off
  EXPECT_GT(dist[0], 1e-4);   // plain quantization: noise floor
  EXPECT_LT(dist[0], 0.2);    // ... but it stays near x_FA
}

// Bits up (and down) are 8 * the encoded bytes: fixed-width dithering sends
// MaxPayloadBytes(q, u) bytes per agent, u = d (FedAvg) or 2d (Scaffold).
TEST(FedOptCompression, BitsAreEightTimesTheEncodedBytes) {
  ExperimentConfig c = ShortHeterogeneousLsq();
  c.rounds = 20;
  c.participation = 0.6;
  c.algorithms = {"fedavg", "scaffold", "fedprox", "fedavg-rr"};
  Dither(c, 4, true);
  c.compression.downlink = true;
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int d = c.garnet.dim;
  for (const auto& a : r->algorithms) {
    const int u = a.name == "scaffold" ? 2 * d : d;
    const int chains = a.name == "fedavg-rr" ? 2 : 1;
    const uint64_t per = compression::MaxPayloadBytes(c.compression.quantizer, u) * 8;
    for (long t = 1; t <= c.rounds; ++t) {
      EXPECT_EQ(a.bits_up[0][t], a.agents[0][t] * per * chains) << a.name << " round " << t;
      // Downlink: each agent gets the delta (per x chains) when its last
      // update proves it holds the previous xhat, xhat whole (64 bits a value) otherwise.
      const uint64_t whole = 64ull * static_cast<uint64_t>(u) * chains, delta = per * chains;
      const uint64_t n = a.agents[0][t], down = a.bits_down[0][t];
      ASSERT_GE(down, n * delta) << a.name << " round " << t;
      EXPECT_EQ((down - n * delta) % (whole - delta), 0u) << a.name << " round " << t;
      EXPECT_LE((down - n * delta) / (whole - delta), n) << a.name << " round " << t;
      if (t == 1) {
        EXPECT_EQ(down, n * whole) << a.name;  // nobody holds xhat yet
      }
    }
    EXPECT_LT(per, static_cast<uint64_t>(u) * 32);  // below float32
  }
  // Elias-gamma: variable length, still accounted (and smaller than raw).
  c.compression.quantizer.elias_gamma = true;
  c.algorithms = {"scaffold"};
  auto e = sim::RunExperiment(c);
  ASSERT_TRUE(e.ok()) << e.status().message();
  for (long t = 1; t <= c.rounds; ++t) {
    EXPECT_GT(e->algorithms[0].bits_up[0][t], 0u);
    EXPECT_LT(e->algorithms[0].bits_up[0][t], e->algorithms[0].agents[0][t] * 2ull * d * 64);
  }
}

// Compressed downlink: agents run from xhat, the server keeps x_t; Scaffold
// still converges with full gradients. FedProx and stochastic rounding run.
TEST(FedOptCompression, DownlinkAndOtherAlgorithmsRun) {
  ExperimentConfig c = ShortHeterogeneousLsq();
  c.algorithms = {"scaffold"};
  Dither(c, 4, true);
  c.compression.downlink = true;
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::printf("scaffold dither s=4 cv, compressed downlink: ||x_T - x*||^2 = %.3e\n", r->algorithms[0].error[0].back());
  EXPECT_LT(r->algorithms[0].error[0].back(), 1e-20 * r->algorithms[0].error[0][0]);

  c.algorithms = {"fedprox", "fedprox-exact"};
  c.compression.downlink = false;
  c.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  c.compression.quantizer.bits = 8;
  c.compression.quantizer.clip = 4.0;
  c.rounds = 50;
  auto p = sim::RunExperiment(c);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ExperimentConfig raw_cfg = c;
  raw_cfg.compression = {};
  auto raw = sim::RunExperiment(raw_cfg);
  ASSERT_TRUE(raw.ok()) << raw.status().message();
  for (size_t k = 0; k < p->algorithms.size(); ++k) {
    const double e = p->algorithms[k].error[0].back(), e_raw = raw->algorithms[k].error[0].back();
    std::printf("%s, 8-bit rounding (clip 4): final error %.4e, uncompressed %.4e\n", p->algorithms[k].name.c_str(), e,
                e_raw);
    EXPECT_NE(e, e_raw);  // the quantizer did act
    EXPECT_NEAR(e, e_raw, 0.05 * e_raw) << p->algorithms[k].name;
  }
}

TEST(FedOptCompression, ResultsDoNotDependOnThreadCount) {
  ExperimentConfig c = ShortHeterogeneousLsq();
  c.problem = ProblemKind::kLogistic;
  c.opt.samples = 200;
  c.local_steps = 50;
  c.rounds = 6;
  c.runs = 2;
  c.participation = 0.7;
  c.algorithms = {"fedavg", "scaffold", "fedavg-rr"};
  Dither(c, 2, true);
  c.compression.downlink = true;
  c.threads = 1;
  auto a = sim::RunExperiment(c);
  c.threads = 3;
  auto b = sim::RunExperiment(c);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  for (size_t k = 0; k < a->algorithms.size(); ++k)
    for (size_t run = 0; run < 2; ++run) {
      EXPECT_EQ(a->algorithms[k].error[run], b->algorithms[k].error[run]);
      EXPECT_EQ(a->algorithms[k].bits_up[run], b->algorithms[k].bits_up[run]);
    }
}

}  // namespace
}  // namespace fedrt
