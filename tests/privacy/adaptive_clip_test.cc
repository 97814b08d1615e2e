// Adaptive clipping for central DP-FedAvg (docs/privacy.md, "Adaptive
// clipping"): the clip follows the target quantile of the update norms, each
// step is the equation of algorithms/adaptive_clip.h on the round's last
// noise draw, the outputs carry the clip, and bad settings are refused
// naming the keys. Fixed seeds (privacy.test_seed, problem and run seeds).

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "fedrt/config/adaptive_clip.h"
#include "fedrt/config/experiment_toml.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/privacy/gaussian_noise.h"
#include "fedrt/report/outputs.h"
#include "fedrt/sim/session_driver.h"
#include "fedrt/sim/simulator.h"

namespace fedrt {
namespace adaptive_clip_test {

using config::ExperimentConfig;

constexpr uint64_t kTestSeed = 3;

// Least squares whose devices' update norms are spread (concept shift), 200
// devices at q = 0.5 (q N = 100: sigma_b = 5), sigma = 1 (the sum's noise
// multiplier sigma_Delta = (1 - 1/100)^(-1/2) = 1.005).
ExperimentConfig AdaptiveLsq(double quantile, double clip0, uint32_t rounds) {
  ExperimentConfig c;
  c.problem = task::ProblemKind::kLeastSquares;
  c.garnet.agents = 200;
  c.garnet.dim = 6;
  c.opt.samples = 30;
  c.opt.concept_shift = 2.0;
  c.problem_seed = 11;
  c.seed = 5;
  c.step = 0.05;
  c.local_steps = 10;
  c.rounds = rounds;
  c.participation = 0.5;
  c.algorithms = {"fedavg"};
  c.algorithms_set = true;
  c.plot = false;
  c.threads = 1;
  c.privacy.mechanism = "central";
  c.privacy.clip = clip0;
  c.privacy.noise_multiplier = 1.0;
  c.privacy.test_seed = kTestSeed;
  c.privacy.adaptive_quantile = quantile;
  return c;
}

struct Trace {
  std::vector<double> clip;  // C_t, the clip round t used
  std::vector<uint32_t> within, members;
  double final_clip = 0;
};

// The run through the simulator's driver, recording every commit.
Trace RunAdaptive(const ExperimentConfig& c) {
  Trace tr;
  EXPECT_TRUE(config::Validate(c).ok());
  auto task = config::MakeTask(c);
  auto inst = config::BuildInstance(c);
  EXPECT_TRUE(task.ok() && inst.ok());
  if (!task.ok() || !inst.ok()) return tr;
  auto adaptive = config::AdaptiveClipFor(c.privacy, task->participation, task->problem.agents, false);
  EXPECT_TRUE(adaptive.ok());
  auto noise = std::make_shared<privacy::GaussianNoise>(privacy::GaussianNoise::Seeded(kTestSeed, 0, 0));
  sim::DriverOptions o;
  o.task = &*task;
  o.agents = &(*inst)->locals();
  const auto& x0 = (*inst)->initial_iterate();
  o.initial = protocol::View<double>{x0.data(), static_cast<uint32_t>(x0.size())};
  o.park_idle_agents = false;
  o.standard_normal = [noise](double* out, size_t n) { return noise->Fill(out, n); };
  o.adaptive = *adaptive;
  sim::SessionDriver driver;
  Status st = driver.run(o, [&](const sim::DriverRound& r) {
    tr.clip.push_back(r.commit->clip);
    tr.within.push_back(r.commit->within_clip);
    tr.members.push_back(static_cast<uint32_t>(r.commit->members.size()));
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  tr.final_clip = driver.server().clip();
  return tr;
}

// Fraction of the members within the clip over rounds [from, end).
double WithinFraction(const Trace& tr, size_t from) {
  double within = 0, members = 0;
  for (size_t t = from; t < tr.within.size(); ++t) within += tr.within[t], members += tr.members[t];
  return within / members;
}

// The clip settles where the fraction of members within it is the target
// quantile. Over rounds 150..399 (after the clip and the model have settled)
// about 250 x 100 = 25000 indicators are averaged: the binomial spread of
// their mean is below 0.01, and the clip's own wandering (the count noise
// sigma_b / (q N) = 0.05 per round, damped by eta_C = 0.2) moves the
// quantile it tracks by a few hundredths: a tolerance of 0.05.
TEST(AdaptiveClip, ClipConvergesTowardTheTargetQuantile) {
  std::vector<double> settled;
  for (double gamma : {0.2, 0.8}) {
    for (double clip0 : {0.01, 10.0}) {
      const Trace tr = RunAdaptive(AdaptiveLsq(gamma, clip0, 400));
      ASSERT_EQ(tr.clip.size(), 400u);
      EXPECT_EQ(tr.clip[0], clip0);
      // Far from the norms the clip moves toward them every round: up from
      // 0.01 (every update longer: btilde near 0 < gamma), down from 10
      // (every update within: btilde near 1 > gamma).
      for (size_t t = 0; t < 20; ++t)
        EXPECT_EQ(tr.clip[t + 1] > tr.clip[t], clip0 < 1) << "gamma " << gamma << " C_0 " << clip0 << " round " << t;
      const double f = WithinFraction(tr, 150);
      std::printf("gamma %.1f C_0 %g: C_150 %.6g C_400 %.6g, fraction within over rounds 150..399 %.4f\n", gamma,
                  clip0, tr.clip[150], tr.final_clip, f);
      EXPECT_NEAR(f, gamma, 0.05) << "C_0 " << clip0;
      settled.push_back(tr.clip[150]);
    }
    // Both starts settle on the same clip (within 1 %).
    EXPECT_NEAR(settled[0] / settled[1], 1.0, 0.01) << "gamma " << gamma;
    settled.clear();
  }
  // A higher quantile, a longer clip.
  EXPECT_GT(RunAdaptive(AdaptiveLsq(0.8, 1.0, 200)).final_clip, RunAdaptive(AdaptiveLsq(0.2, 1.0, 200)).final_clip);
}

// Each step is C_{t+1} = C_t exp(-eta_C (btilde - gamma)), btilde =
// (sum (b_i - 1/2) + z sigma_b) / (q N) + 1/2, with z the round's last draw
// of the test_seed stream (after the sum's d): replayed here from the same
// stream, every clip is the same bits.
TEST(AdaptiveClip, EveryStepIsTheEquationOnTheRoundsLastDraw) {
  const ExperimentConfig c = AdaptiveLsq(0.5, 0.3, 30);
  const Trace tr = RunAdaptive(c);
  ASSERT_EQ(tr.clip.size(), 30u);
  auto a = config::AdaptiveClipFor(c.privacy, 0.5, 200, false);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->count_noise, 5.0);
  EXPECT_EQ(a->expected_members, 100.0);
  EXPECT_NEAR(a->noise_multiplier, 1.0 / std::sqrt(1.0 - 0.01), 1e-15);
  privacy::GaussianNoise replay = privacy::GaussianNoise::Seeded(kTestSeed, 0, 0);
  std::vector<double> z(static_cast<size_t>(c.garnet.dim) + 1);
  double clip = 0.3;
  for (size_t t = 0; t < tr.clip.size(); ++t) {
    EXPECT_EQ(tr.clip[t], clip) << "round " << t;
    ASSERT_TRUE(replay.Fill(z.data(), z.size()).ok());
    const double fraction = (tr.within[t] - 0.5 * tr.members[t] + z.back() * 5.0) / 100.0 + 0.5;
    clip = clip * std::exp(-0.2 * (fraction - 0.5));
  }
  EXPECT_EQ(tr.final_clip, clip);
}

// metrics.csv's clip column is the clip each round used, summary.json has
// the quantile and the final clip; the same settings give the same bits.
TEST(AdaptiveClip, OutputsCarryTheClip) {
  ExperimentConfig c = AdaptiveLsq(0.5, 0.3, 8);
  c.out = (std::filesystem::temp_directory_path() / "fedrt_adaptive_clip_outputs").string();
  auto r = sim::RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Trace tr = RunAdaptive(c);
  const auto& a = r->algorithms[0];
  ASSERT_EQ(a.clip.size(), 1u);
  ASSERT_EQ(a.clip[0].size(), 9u);
  EXPECT_EQ(a.clip[0][0], 0.3);
  for (size_t t = 0; t < 8; ++t) EXPECT_EQ(a.clip[0][t + 1], tr.clip[t]) << "round " << t;
  std::filesystem::create_directories(c.out);
  ASSERT_TRUE(report::WriteMetricsCsv(*r, c.out + "/metrics.csv").ok());
  std::ifstream in(c.out + "/metrics.csv");
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "algorithm,run,round,error,agents,bits_up,bits_down,epsilon,clip");
  const nlohmann::json s = report::SummaryJson(*r)["algorithms"]["fedavg"];
  EXPECT_EQ(s["adaptive_quantile"].get<double>(), 0.5);
  ASSERT_EQ(s["final_clip"].size(), 1u);
  EXPECT_EQ(s["final_clip"][0].get<double>(), tr.final_clip);
  EXPECT_EQ(s["clip"].get<double>(), 0.3);  // privacy.clip, the initial clip
  std::filesystem::remove_all(c.out);
}

std::string ErrorOf(const std::string& privacy_table, const std::string& extra = "") {
  ExperimentConfig c;
  const std::string text = "[problem]\nkind = \"lsq\"\nagents = 100\n[algorithm]\nnames = [\"fedavg\"]\n" + extra +
                           "[privacy]\n" + privacy_table;
  toml::table root = toml::parse(text);
  Status st = config::LoadExperimentTable(root, "exp.toml", "", c);
  if (st.ok()) st = config::Validate(c);
  return st.ok() ? "" : st.message();
}

// Bad input names the key: a quantile outside (0, 1); a noise multiplier
// the count's noise leaves nothing of (2 sigma_b <= sigma: at q N = 100,
// sigma_b = 5, so sigma >= 10 is refused); secure aggregation.
TEST(AdaptiveClip, BadInputNamesTheKey) {
  const std::string central = "mechanism = \"central\"\n";
  EXPECT_EQ(ErrorOf(central + "adaptive_quantile = 0.5\n"), "");
  EXPECT_EQ(ErrorOf(central + "adaptive_quantile = 0.5\nnoise_multiplier = 9.9\n"), "");
  for (const char* q : {"0", "1", "1.5", "-0.2"})
    EXPECT_NE(ErrorOf(central + "adaptive_quantile = " + q + "\n").find("privacy.adaptive_quantile must be in (0, 1)"),
              std::string::npos)
        << q;
  const std::string small = ErrorOf(central + "adaptive_quantile = 0.5\nnoise_multiplier = 10.0\n");
  EXPECT_NE(small.find("privacy.noise_multiplier 10 is too small for privacy.adaptive_quantile"), std::string::npos)
      << small;
  EXPECT_NE(small.find("participation.rate x problem.agents"), std::string::npos) << small;
  EXPECT_NE(ErrorOf(central + "adaptive_quantile = 0.5\nnoise_multiplier = 2.0\n", "[participation]\nrate = 0.1\n")
                .find("is too small for privacy.adaptive_quantile"),
            std::string::npos);
  auto secure = config::AdaptiveClipFor(
      [] {
        config::PrivacySettings p;
        p.mechanism = "central";
        p.adaptive_quantile = 0.5;
        return p;
      }(),
      1.0, 100, true);
  ASSERT_FALSE(secure.ok());
  EXPECT_NE(std::string(secure.status().message()).find("the count would have to travel inside the secure sum"),
            std::string::npos);
}

}  // namespace adaptive_clip_test
}  // namespace fedrt
