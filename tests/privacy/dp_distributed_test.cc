// Distributed DP-FedAvg under SecAgg+ (docs/privacy-distributed.md, "Distributed DP
// under SecAgg+") through the sessions the simulator runs: the devices'
// noise on the sum has the variance it claims, with every device surviving
// and with devices dropping to the quorum; clipping bounds what the devices
// move; the accountant takes the effective noise multiplier; bad settings
// are refused naming the key. Fixed seeds (privacy.test_seed).

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "fedrt/config/experiment_toml.h"
#include "fedrt/privacy/ddg_params.h"
#include "fedrt/privacy/rdp_accountant.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/report/outputs.h"
#include "fedrt/sim/session_driver.h"
#include "fedrt/sim/simulator.h"
#include "fedrt/task/fingerprint.h"

namespace fedrt {
namespace dp_distributed_test {

constexpr uint32_t kDim = 10000;
constexpr uint32_t kAgents = 100;

// One round of FedAvg on least squares whose every update is exactly zero
// (features and labels all 0, x_0 = 0: every gradient is 0), N = 100 devices
// all sampled (q = 1: n = 100, m = ceil(0.8 n) = 80), d = 10^4 (d_pad =
// 16384), sigma = 1.1, clip = 2, s2 = 2^16, through SessionDriver (the
// simulator's driver: client sessions, SecAgg+, the server session). Returns
// the sample std of the model's coordinates and the round's contributors.
double NoiseStd(double dropout, uint32_t& contributors, uint32_t& sampled) {
  task::Task t;
  t.problem.kind = task::ProblemKind::kLeastSquares;
  t.problem.agents = kAgents;
  t.problem.dim = kDim;
  t.num_algorithms = 1;
  t.algorithms[0] = task::AlgorithmChoice{task::AlgorithmKind::kFedAvg, false};
  t.hyper.step = 0.1;
  t.hyper.local_steps = 2;
  t.rounds = 1;
  t.participation = 1.0;
  t.seed = 21;
  t.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  t.compression.quantizer.bits = 20;
  t.secagg.enabled = true;
  t.secagg.dropout = dropout;
  t.privacy.enabled = true;
  t.privacy.distributed = true;
  t.privacy.clip = 2.0;
  t.privacy.noise_multiplier = 1.1;
  t.privacy.quorum_ppm = 800000;
  t.privacy.device_variance = 1u << 16;
  t.privacy.has_test_seed = true;
  t.privacy.test_seed = 7;
  std::vector<double> zeros(kDim, 0.0), label(1, 0.0);
  auto oracle = problems::LeastSquaresOracle<double>::CreateMatrixFree(kDim, 1, zeros.data(), label.data(), 0.0, false);
  EXPECT_TRUE(oracle.ok());
  std::vector<problems::LocalProblem<double>> agents(kAgents);
  for (auto& a : agents) a.least_squares = &*oracle;
  sim::DriverOptions o;
  o.task = &t;
  o.agents = &agents;
  o.initial = protocol::View<double>{zeros.data(), kDim};
  sim::SessionDriver driver;
  std::vector<double> x;
  const Status st = driver.run(o, [&](const sim::DriverRound& r) {
    contributors = static_cast<uint32_t>(r.commit->members.size());
    sampled = r.commit->sampled;
    EXPECT_EQ(r.commit->failure, "");
    x.assign(r.server->core().model(), r.server->core().model() + kDim);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  if (x.empty()) return 0;
  double mean = 0, sq = 0;
  for (double v : x) mean += v;
  mean /= kDim;
  for (double v : x) sq += (v - mean) * (v - mean);
  return std::sqrt(sq / (kDim - 1));
}

// Devices drop to exactly the quorum (dropout 0.2 of n = 100: 80 survive,
// m = 80): the noise on the average is sigma clip / (q N), within 3 % (the
// sample std of 10^4 normal values has a standard error of 0.7 %).
TEST(DpDistributed, NoiseAtTheQuorumIsSigmaClipOverQN) {
  uint32_t members = 0, n = 0;
  const double sd = NoiseStd(0.2, members, n);
  const double claimed = 1.1 * 2.0 / (1.0 * kAgents);
  std::printf("distributed, dropout to the quorum: sample std %.6g, sigma clip / (q N) = %.6g (ratio %.4f), %u of %u "
              "sampled devices contributed\n",
              sd, claimed, sd / claimed, members, n);
  ASSERT_EQ(n, kAgents);
  ASSERT_EQ(members, 80u);  // = m = ceil(0.8 x 100)
  EXPECT_NEAR(sd / claimed, 1.0, 0.03);
}

// Every device survives: each adds the same share, so the noise is
// sqrt(n / m) times the target, sigma clip sqrt(n / m) / (q N) (>= it).
TEST(DpDistributed, NoiseWithEveryDeviceIsSqrtNOverMAboveTheTarget) {
  uint32_t members = 0, n = 0;
  const double sd = NoiseStd(0.0, members, n);
  const double claimed = 1.1 * 2.0 * std::sqrt(100.0 / 80.0) / (1.0 * kAgents);
  std::printf("distributed, every device: sample std %.6g, sigma clip sqrt(n/m) / (q N) = %.6g (ratio %.4f), %u of %u "
              "contributed\n",
              sd, claimed, sd / claimed, members, n);
  ASSERT_EQ(members, kAgents);
  EXPECT_NEAR(sd / claimed, 1.0, 0.03);
}

// Fewer survivors than the quorum: the server does not unmask, nothing moves.
TEST(DpDistributed, BelowTheQuorumTheRoundIsNotReleased) {
  // N = 20 all sampled, m = 16; dropout 0.3: 14 send their masked input.
  task::Task t;
  t.problem.kind = task::ProblemKind::kLeastSquares;
  t.problem.agents = 20;
  t.problem.dim = 8;
  t.num_algorithms = 1;
  t.algorithms[0] = task::AlgorithmChoice{task::AlgorithmKind::kFedAvg, false};
  t.rounds = 1;
  t.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  t.compression.quantizer.bits = 20;
  t.secagg.enabled = true;
  t.secagg.dropout = 0.3;
  t.privacy.enabled = true;
  t.privacy.distributed = true;
  t.privacy.clip = 1.0;
  t.privacy.noise_multiplier = 1.0;
  t.privacy.quorum_ppm = 800000;
  t.privacy.device_variance = 1u << 10;
  t.privacy.has_test_seed = true;
  t.privacy.test_seed = 1;
  std::vector<double> zeros(8, 0.0), label(1, 1.0), feats(8, 1.0);
  auto oracle = problems::LeastSquaresOracle<double>::CreateMatrixFree(8, 1, feats.data(), label.data(), 0.0, false);
  ASSERT_TRUE(oracle.ok());
  std::vector<problems::LocalProblem<double>> agents(20);
  for (auto& a : agents) a.least_squares = &*oracle;
  sim::DriverOptions o;
  o.task = &t;
  o.agents = &agents;
  o.initial = protocol::View<double>{zeros.data(), 8};
  sim::SessionDriver driver;
  std::string failure;
  uint32_t members = 1, n = 0;
  std::vector<double> x;
  const Status st = driver.run(o, [&](const sim::DriverRound& r) {
    failure = r.commit->failure;
    members = static_cast<uint32_t>(r.commit->members.size());
    n = r.commit->sampled;
    x.assign(r.server->core().model(), r.server->core().model() + 8);
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(n, 20u);
  EXPECT_EQ(members, 0u);
  EXPECT_NE(failure.find("fewer than the 16 whose noise the round needs (privacy.quorum)"), std::string::npos)
      << failure;
  for (double v : x) EXPECT_EQ(v, 0.0);
}

config::ExperimentConfig DistributedLsq(long agents, double rate) {
  config::ExperimentConfig c;
  c.problem = task::ProblemKind::kLeastSquares;
  c.garnet.agents = agents;
  c.garnet.dim = 6;
  c.opt.samples = 30;
  c.opt.concept_shift = 1.0;
  c.problem_seed = 11;
  c.seed = 5;
  c.step = 0.1;
  c.local_steps = 10;
  c.rounds = 1;
  c.participation = rate;
  c.algorithms = {"fedavg"};
  c.algorithms_set = true;
  c.plot = false;
  c.threads = 1;
  c.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  c.compression.quantizer.bits = 24;
  c.secagg.enabled = true;
  c.privacy.mechanism = "distributed";
  c.privacy.clip = 1.0;
  c.privacy.noise_multiplier = 0.01;  // small noise: what moves the model is the clipped updates
  c.privacy.test_seed = 3;
  return c;
}

// Devices whose updates are 100 x clip move the average by at most
// members x clip / (q N), up to the rounding and the (small) noise.
TEST(DpDistributed, ClippingBoundsWhatTheDevicesMove) {
  config::ExperimentConfig plain = DistributedLsq(4, 1.0);
  plain.privacy = config::PrivacySettings{};
  plain.secagg.enabled = false;
  plain.compression = config::CompressionSettings{};
  auto free_run = sim::RunExperiment(plain);
  ASSERT_TRUE(free_run.ok()) << free_run.status().message();
  const Eigen::VectorXd dx = free_run->algorithms[0].final_theta[0];  // x_0 = 0: the mean update
  const double clip = dx.norm() / 100.0;
  config::ExperimentConfig c = DistributedLsq(4, 1.0);
  c.privacy.clip = clip;
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Eigen::VectorXd x1 = r->algorithms[0].final_theta[0];
  const uint32_t members = r->algorithms[0].agents[0][1];
  ASSERT_EQ(members, 4u);
  // Noise std sigma clip sqrt(n/m) / (q N) per coordinate, rounding gamma sqrt(d_pad) / 2 per device in norm.
  const double slack = 5 * 0.01 * clip * std::sqrt(6.0 * 4 / 4) / 4;
  std::printf("clipping: |x1| = %.6g, members clip / (q N) = %.6g\n", x1.norm(), members * clip / 4.0);
  EXPECT_LE(x1.norm(), members * clip / 4.0 + slack);
  EXPECT_GT(x1.dot(dx) / (x1.norm() * dx.norm()), 0.9);  // and in the updates' direction
}

// The accountant takes sqrt(m s2) / Delta per round, below sigma, and
// summary.json reports both.
TEST(DpDistributed, EpsilonUsesTheEffectiveNoiseMultiplier) {
  config::ExperimentConfig c = DistributedLsq(10, 1.0);
  c.rounds = 3;
  c.privacy.noise_multiplier = 1.0;
  c.privacy.device_variance = 1u << 12;
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& a = r->algorithms[0];
  privacy::DdgRound round;
  ASSERT_EQ(privacy::DdgPlan(1.0, 1.0, 800000, 1u << 12, 10, 6, 24, round), nullptr);
  const double eff = privacy::DdgEffectiveNoise(round);
  EXPECT_LT(eff, 1.0);
  for (uint64_t t = 1; t <= 3; ++t) {
    auto want = privacy::Epsilon({{1.0, eff, t}}, 1e-5);
    ASSERT_TRUE(want.ok());
    EXPECT_NEAR(a.epsilon[0][t], want->epsilon, 1e-12 * want->epsilon) << t;
  }
  const nlohmann::json s = report::SummaryJson(*r)["algorithms"]["fedavg"];
  EXPECT_EQ(s["mechanism"], "distributed");
  EXPECT_EQ(s["noise_multiplier"].get<double>(), 1.0);
  EXPECT_EQ(s["effective_noise_multiplier"].get<double>(), eff);
  std::printf("effective noise multiplier %.6g for sigma 1 (n = 10, s2 = 2^12, d = 6)\n", eff);
}

// The same test_seed gives the same bits, another seed other noise.
TEST(DpDistributed, TestSeedMakesTheNoiseReproducible) {
  config::ExperimentConfig c = DistributedLsq(10, 0.5);
  c.rounds = 3;
  c.privacy.noise_multiplier = 1.0;
  auto a = sim::RunExperiment(c);
  auto b = sim::RunExperiment(c);
  c.privacy.test_seed = 4;
  auto other = sim::RunExperiment(c);
  ASSERT_TRUE(a.ok() && b.ok() && other.ok()) << a.status().message();
  EXPECT_EQ(a->algorithms[0].final_theta[0], b->algorithms[0].final_theta[0]);
  EXPECT_NE(a->algorithms[0].final_theta[0], other->algorithms[0].final_theta[0]);
}

// The budget stops before the round that would exceed it, at sigma_eff.
TEST(DpDistributed, BudgetStopsAtTheEffectiveNoise) {
  config::ExperimentConfig c = DistributedLsq(10, 1.0);
  c.rounds = 20;
  c.privacy.noise_multiplier = 1.0;
  c.privacy.device_variance = 1u << 12;
  privacy::DdgRound round;
  ASSERT_EQ(privacy::DdgPlan(1.0, 1.0, 800000, 1u << 12, 10, 6, 24, round), nullptr);
  const double eff = privacy::DdgEffectiveNoise(round);
  const double budget = privacy::Epsilon({{1.0, eff, 3}}, 1e-5)->epsilon * 1.0001;  // 3 rounds fit, 4 do not
  c.privacy.epsilon_budget = budget;
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->algorithms[0].error[0].size(), 4u);
  EXPECT_LE(r->algorithms[0].epsilon[0].back(), budget);
  // Between one round at sigma and one at sigma_eff: no round can run.
  c.privacy.epsilon_budget = 0.5 * (privacy::Epsilon({{1.0, 1.0, 1}}, 1e-5)->epsilon +
                                    privacy::Epsilon({{1.0, eff, 1}}, 1e-5)->epsilon);
  auto none = sim::RunExperiment(c);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("privacy.epsilon_budget"), std::string::npos);
}

// Fingerprints: the distributed fields count only for a distributed task.
TEST(DpDistributed, FingerprintsChangeOnlyForDistributedTasks) {
  task::Task t;
  t.problem.kind = task::ProblemKind::kLeastSquares;
  t.num_algorithms = 1;
  t.algorithms[0] = task::AlgorithmChoice{task::AlgorithmKind::kFedAvg, false};
  t.privacy.enabled = true;
  const uint64_t central = task::SessionFingerprint(t, 0, 0);
  t.privacy.quorum_ppm = 500000;
  t.privacy.device_variance = 7;
  EXPECT_EQ(task::SessionFingerprint(t, 0, 0), central);
  t.privacy.distributed = true;
  const uint64_t distributed = task::SessionFingerprint(t, 0, 0);
  EXPECT_NE(distributed, central);
  t.privacy.quorum_ppm = 600000;
  EXPECT_NE(task::SessionFingerprint(t, 0, 0), distributed);
}

std::string ErrorOf(const std::string& privacy_table, const std::string& compression) {
  config::ExperimentConfig c;
  const std::string text = "[problem]\nkind = \"lsq\"\n[algorithm]\nnames = [\"fedavg\"]\n[compression]\n" +
                           compression + "[privacy]\nmechanism = \"distributed\"\n" + privacy_table;
  toml::table root = toml::parse(text);
  Status st = config::LoadExperimentTable(root, "exp.toml", "", c);
  if (st.ok()) st = config::Validate(c);
  if (st.ok()) {
    c.rounds = 1;
    c.plot = false;
    auto r = sim::RunExperiment(c);
    st = r.ok() ? Status::Ok() : r.status();
  }
  return st.ok() ? "" : st.message();
}

TEST(DpDistributed, BadInputNamesTheKey) {
  const std::string secure = "quantizer = \"rounding\"\nbits = 20\nsecure_aggregation = true\n";
  EXPECT_EQ(ErrorOf("test_seed = 1\n", secure), "");
  EXPECT_NE(ErrorOf("", "").find("needs compression.secure_aggregation = true"), std::string::npos);
  EXPECT_NE(ErrorOf("quorum = 0\n", secure).find("privacy.quorum must be in (0, 1]"), std::string::npos);
  EXPECT_NE(ErrorOf("quorum = 1.5\n", secure).find("privacy.quorum"), std::string::npos);
  EXPECT_NE(ErrorOf("device_variance = 0\n", secure).find("privacy.device_variance must be in"), std::string::npos);
  EXPECT_NE(ErrorOf("device_variance = 16777217\n", secure).find("privacy.device_variance"), std::string::npos);
  EXPECT_NE(ErrorOf("noise_multiplier = 0.0\n", secure).find("privacy.noise_multiplier must be > 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf("", "quantizer = \"dither\"\nsecure_aggregation = true\n").find("compression."),
            std::string::npos);
  EXPECT_NE(ErrorOf("", secure + "control_variates = true\n").find("compression.control_variates"), std::string::npos);
  // A group too small for the sum: names compression.bits.
  EXPECT_NE(ErrorOf("", "quantizer = \"rounding\"\nbits = 8\nsecure_aggregation = true\n").find("compression.bits"),
            std::string::npos);
  config::ExperimentConfig central;
  central.problem = task::ProblemKind::kLeastSquares;
  central.algorithms = {"fedavg"};
  central.privacy.mechanism = "central";
  central.privacy.quorum = 0.5;
  EXPECT_NE(std::string(config::Validate(central).message()).find("privacy.quorum and privacy.device_variance"),
            std::string::npos);
}

}  // namespace dp_distributed_test
}  // namespace fedrt
