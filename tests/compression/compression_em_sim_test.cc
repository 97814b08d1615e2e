// End-to-end checks of the compressed LSA uplink and the federated EM driver
// (docs/algorithms.md, section 4 and 5). Fixed seeds; each simulation takes well under a second
// in release (label "statistical": skipped in the sanitizer build).
#include <cmath>

#include <gtest/gtest.h>

#include "fedrt/config/experiment.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim {
using namespace fedrt::config;
namespace {

double MeanFinal(const AlgorithmResult& a) {
  double m = 0;
  for (const auto& e : a.error) m += e.back() / a.error.size();
  return m;
}

ExperimentConfig GarnetHigh() {
  ExperimentConfig c;
  c.garnet.heterogeneity = problems::Heterogeneity::kHigh;
  c.garnet.agents = 100;
  c.local_steps = 1000;
  c.rounds = 100;
  c.runs = 3;
  c.step = 0.01;
  c.threads = 2;
  c.algorithms = {"scafflsa"};
  c.plot = false;
  return c;
}

// SCAFFLSA, high heterogeneity, 4 bits per coordinate (shared-scale
// stochastic rounding, clip 0.5): final error within 2x of uncompressed and
// at most 1/6 of float32's uplink bits. Mean of 3 runs: single runs of the
// uncompressed algorithm already vary by about 30 %, see examples/compression-garnet.
TEST(CompressedLsa, ScaffLsaWithFourBitsStaysWithinTwiceUncompressed) {
  ExperimentConfig base = GarnetHigh();
  auto ref = RunExperiment(base);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  ExperimentConfig q = base;
  q.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  q.compression.quantizer.bits = 4;
  q.compression.quantizer.clip = 0.5;
  q.compression.control_variates = true;
  auto cmp = RunExperiment(q);
  ASSERT_TRUE(cmp.ok()) << cmp.status().message();
  const double e_ref = MeanFinal(ref->algorithms[0]), e_cmp = MeanFinal(cmp->algorithms[0]);
  EXPECT_LT(e_cmp, 2.0 * e_ref) << "uncompressed " << e_ref << " vs 4-bit " << e_cmp;
  // Exact accounting: every agent sends ceil(8 * 4 / 8) = 4 bytes per round.
  const auto& up = cmp->algorithms[0].bits_up[0];
  const int d = cmp->problem.dim;
  for (size_t t = 1; t < up.size(); ++t) EXPECT_EQ(up[t], 100u * ((d * 4 + 7) / 8) * 8);
  EXPECT_LE(up[1] * 6, 100u * d * 32u);  // <= 1/6 of float32
}

TEST(CompressedLsa, ResultsDoNotDependOnThreadCount) {
  ExperimentConfig c = GarnetHigh();
  c.runs = 1;
  c.rounds = 20;
  c.algorithms = {"fedlsa", "scafflsa"};
  c.compression.quantizer.kind = compression::QuantizerKind::kDither;
  c.compression.quantizer.levels = 3;
  c.compression.control_variates = true;
  c.compression.downlink = true;
  c.threads = 1;
  auto a = RunExperiment(c);
  c.threads = 2;
  auto b = RunExperiment(c);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a->algorithms[i].error, b->algorithms[i].error);
    EXPECT_EQ(a->algorithms[i].bits_up, b->algorithms[i].bits_up);
    EXPECT_EQ(a->algorithms[i].bits_down, b->algorithms[i].bits_down);
  }
}

ExperimentConfig Gmm() {
  ExperimentConfig c;
  c.problem = task::ProblemKind::kGmm;
  c.garnet.agents = 20;
  c.gmm.points = 300;
  c.gmm.own_weight = 0.9;  // strongly heterogeneous
  c.gmm.em_step = 0.5;
  c.participation = 0.5;
  c.rounds = 300;
  c.runs = 2;
  c.threads = 2;
  c.compression.quantizer.kind = compression::QuantizerKind::kDither;
  c.compression.quantizer.levels = 4;
  c.algorithms = {"fedem", "fedem-naive"};
  c.plot = false;
  return c;
}

// FedEM (full local statistics, dithering with s = 4, p = 0.5, gamma = 0.5)
// drives ||h||^2 below 1e-8; naive FedEM stalls at least 10x higher.
TEST(FedEmSim, ControlVariatesRemoveTheQuantizationFloor) {
  auto r = RunExperiment(Gmm());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double fedem = MeanFinal(r->algorithms[0]), naive = MeanFinal(r->algorithms[1]);
  EXPECT_LT(fedem, 1e-8);
  EXPECT_GT(naive, 10 * 1e-8);
  EXPECT_GT(naive, 10 * fedem);
  // and the parameters reach the exact EM fixed point
  EXPECT_LT(r->algorithms[0].extra["final_param_distance_sq_mean"].get<double>(), 1e-8);
}

// Compressed downlink for EM (docs/architecture.md, "Downlink"): the server
// sends Q(Shat_k - xhat), the devices follow xhat and compute T(xhat)
// themselves. As Shat_k settles, xhat catches up (the damped difference
// contracts by omega / (1 + omega) per round), so FedEM still reaches the
// exact fixed point, for far fewer downlink bits than float64 broadcasts.
TEST(FedEmSim, CompressedDownlinkStillReachesTheFixedPoint) {
  ExperimentConfig c = Gmm();
  c.algorithms = {"fedem"};
  c.compression.control_variates = true;
  c.compression.downlink = true;
  auto partial = RunExperiment(c);  // p = 0.5: deltas to the agents that were in the last round, xhat whole to others
  ASSERT_TRUE(partial.ok()) << partial.status().message();
  EXPECT_LT(MeanFinal(partial->algorithms[0]), 1e-8);
  EXPECT_LT(partial->algorithms[0].extra["final_param_distance_sq_mean"].get<double>(), 1e-8);
  // Full participation: every announcement after the first carries a delta.
  c.participation = 1.0;
  auto down = RunExperiment(c);
  c.compression.downlink = false;
  auto raw = RunExperiment(c);
  ASSERT_TRUE(raw.ok() && down.ok()) << (raw.ok() ? down.status().message() : raw.status().message());
  uint64_t bits_raw = 0, bits_down = 0;
  for (const auto& run : raw->algorithms[0].bits_down) for (uint64_t b : run) bits_raw += b;
  for (const auto& run : down->algorithms[0].bits_down) for (uint64_t b : run) bits_down += b;
  const double with = MeanFinal(down->algorithms[0]), without = MeanFinal(raw->algorithms[0]);
  std::printf("[fedem downlink] p = 0.5: ||h||^2 %.3e; p = 1: ||h||^2 %.3e (raw broadcast %.3e), downlink bits %.3e vs "
              "%.3e (%.1fx fewer)\n",
              MeanFinal(partial->algorithms[0]), with, without, static_cast<double>(bits_down),
              static_cast<double>(bits_raw), static_cast<double>(bits_raw) / static_cast<double>(bits_down));
  EXPECT_LT(with, 1e-8);
  // float64 pairs (statistic, parameters) against a norm and 4 bits a coordinate
  // of the statistic: about 30x per round; 8x leaves room for the whole first one.
  EXPECT_GT(bits_raw, 8 * bits_down);
}

// With mini-batched statistics (b = 10 of 300), FedEM stalls at the
// mini-batch noise while VR-FedEM reaches the full-pass accuracy.
TEST(FedEmSim, VrFedEmBeatsMiniBatchFedEm) {
  ExperimentConfig c = Gmm();
  c.participation = 1.0;
  c.gmm.batch = 10;
  c.gmm.inner_iters = 10;
  c.runs = 1;
  c.algorithms = {"fedem", "vr-fedem"};
  auto r = RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(MeanFinal(r->algorithms[0]), 1e-6);
  EXPECT_LT(MeanFinal(r->algorithms[1]), 1e-8);
  ExperimentConfig t1 = c;
  t1.threads = 1;
  auto r1 = RunExperiment(t1);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->algorithms[1].error, r->algorithms[1].error);  // thread-count independent
}

}  // namespace
}  // namespace fedrt::sim
