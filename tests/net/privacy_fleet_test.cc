// Central DP-FedAvg on the real fleet (fedrt-coordinator and fedrt-device
// processes over TLS on loopback; docs/privacy.md, "DP-FedAvg on the
// fleet"), compared with fedrt-sim on the same experiment file. Under
// privacy.test_seed both draw the server's noise from the same stream, so
// metrics.csv (error, agents, bits and the epsilon column) is the same line
// for line and the privacy fields of summary.json are equal; an
// epsilon_budget ends both at the same round and both say why.
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace privacy_fleet {

constexpr int kAgents = 6;

struct Case {
  std::string name;
  std::string problem;  // [problem] (+ [model])
  std::string budget;   // extra [privacy] lines
  int rounds;           // [run] rounds
  int rows;             // metrics.csv rows per algorithm (rounds + 1, or fewer under a budget)
  std::string sigma = "1.0";  // privacy.noise_multiplier
};

const char* kLsq = "[problem]\nkind = \"lsq\"\nagents = 6\ndim = 5\n";
const char* kLogistic = "[problem]\nkind = \"logistic\"\nagents = 6\ndim = 4\n";

std::vector<Case> Cases() {
  // q = 0.7, sigma = 1, delta = 1e-5: epsilon 4.87808 after one round,
  // 6.94618 after two, 8.50045 after three, 9.98996 after four
  // (fedrt-privacy epsilon --rate 0.7 --noise-multiplier 1 --rounds N): a
  // budget of 9 ends a run after round 3 of 6.
  return {{"lsq", kLsq, "", 5, 6},
          {"logistic", kLogistic, "", 5, 6},
          {"lsq_budget", kLsq, "epsilon_budget = 9.0\n", 6, 4},
          // Adaptive clipping (docs/privacy.md): q N = 4.2, sigma_b = 0.21,
          // so sigma must stay below 2 sigma_b = 0.42; the clip starts at
          // 0.05, below every update, and grows toward their median.
          {"lsq_adaptive", kLsq, "adaptive_quantile = 0.5\n", 8, 9, "0.4"}};
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PrivacyFleetTest : public NetTest, public ::testing::WithParamInterface<Case> {};

std::vector<std::string> Lines(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_P(PrivacyFleetTest, FleetEqualsSimulatorWithTheSameNoise) {
  const Case& c = GetParam();
  const auto cfg = WriteExperiment(
      c.problem + "[algorithm]\nnames = [\"fedavg\", \"fedprox\"]\nstep = 0.05\nlocal_steps = 10\n"
                  "[participation]\nrate = 0.7\n[run]\nrounds = " + std::to_string(c.rounds) +
      "\nruns = 1\nseed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\nstart_timeout_ms = 60000\n"
      "[privacy]\nmechanism = \"central\"\nclip = 0.05\nnoise_multiplier = " + c.sigma + "\ntest_seed = 11\n" + c.budget);

  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");

  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");

  const auto fleet_csv = Lines(dir_ / "out" / "metrics.csv"), sim_csv = Lines(dir_ / "sim" / "metrics.csv");
  ASSERT_FALSE(sim_csv.empty());
  const bool adaptive = c.budget.find("adaptive_quantile") != std::string::npos;
  const bool budgeted = c.budget.find("epsilon_budget") != std::string::npos;
  EXPECT_EQ(sim_csv[0], std::string("algorithm,run,round,error,agents,bits_up,bits_down,epsilon") +
                            (adaptive ? ",clip" : ""));
  ASSERT_EQ(sim_csv.size(), 1u + 2 * c.rows);
  ASSERT_EQ(fleet_csv.size(), sim_csv.size()) << ReadFile(dir_ / "out" / "metrics.csv");
  for (size_t i = 0; i < sim_csv.size(); ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  std::printf("[%s] last row: %s\n", c.name.c_str(), fleet_csv.back().c_str());
  if (adaptive) {  // the clip moved: round 1 used 0.05, the last round a longer one
    auto clip_of = [](const std::string& row) { return std::stod(row.substr(row.rfind(',') + 1)); };
    EXPECT_EQ(clip_of(sim_csv[2]), 0.05);
    EXPECT_GT(clip_of(sim_csv[c.rows]), 0.05) << sim_csv[c.rows];
  }

  // The comparison can fail: another test_seed, other noise, other errors.
  {
    std::string other = ReadFile(cfg);
    other.replace(other.find("test_seed = 11"), 14, "test_seed = 12");
    std::ofstream(dir_ / "other.toml") << other;
    const pid_t sim2 = Spawn({Bin("fedrt-sim"), "--config", (dir_ / "other.toml").string(), "--out",
                              (dir_ / "sim2").string(), "--no-plot"},
                             dir_ / "sim2.log");
    ASSERT_EQ(Wait(sim2, 120000), 0) << ReadFile(dir_ / "sim2.log");
    const auto sim2_csv = Lines(dir_ / "sim2" / "metrics.csv");
    ASSERT_EQ(sim2_csv.size(), sim_csv.size());
    EXPECT_NE(sim2_csv[2], sim_csv[2]) << "round 1's error does not depend on the noise";
  }
  const auto fleet = nlohmann::json::parse(ReadFile(dir_ / "out" / "summary.json"));
  const auto simj = nlohmann::json::parse(ReadFile(dir_ / "sim" / "summary.json"));
  for (const char* name : {"fedavg", "fedprox"}) {
    const auto& f = fleet["algorithms"][name];
    const auto& s = simj["algorithms"][name];
    for (const char* key : {"mechanism", "epsilon", "delta", "noise_multiplier", "clip", "private"})
      EXPECT_EQ(f[key], s[key]) << name << " " << key;
    if (adaptive) {
      EXPECT_EQ(f["adaptive_quantile"], s["adaptive_quantile"]) << name;
      ASSERT_TRUE(f.contains("final_clip")) << name;
      EXPECT_EQ(f["final_clip"], s["final_clip"]) << name;
    }
    EXPECT_EQ(f["mechanism"], "central");
    EXPECT_EQ(f["private"], false);  // test_seed
    EXPECT_GT(f["epsilon"].get<double>(), 0.0);
    EXPECT_EQ(f.contains("privacy_stop"), budgeted) << name;
    if (budgeted) {
      EXPECT_EQ(f["privacy_stop"], s["privacy_stop"]) << name;
      EXPECT_EQ(f["privacy_stop"][0].get<std::string>().rfind("run 0: stopped after round 3 of 6", 0), 0u)
          << f["privacy_stop"];
      EXPECT_LE(f["epsilon"].get<double>(), 9.0);
    }
  }
  const std::string log = ReadFile(dir_ / "coordinator.log");
  // Every closed round says that the run is not private, and its epsilon.
  EXPECT_EQ(Count(log, "is NOT private"), static_cast<size_t>(2 * (c.rows - 1) + 1)) << log;
  EXPECT_EQ(Count(log, "privacy alg="), static_cast<size_t>(2 * (c.rows - 1)) * 2);
  if (adaptive) EXPECT_EQ(Count(log, "delta=1e-05 clip="), static_cast<size_t>(2 * (c.rows - 1))) << log;
  if (budgeted) {
    EXPECT_EQ(Count(log, "privacy_stop alg="), 2u) << log;
    EXPECT_EQ(Count(log, "round=4 "), 0u) << "no round past the budget opens";
  }
}

INSTANTIATE_TEST_SUITE_P(Central, PrivacyFleetTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace privacy_fleet
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {

// A budget below one round's epsilon leaves no round to run: the coordinator
// refuses the experiment before it listens, naming the key (exit status 2).
TEST_F(NetTest, PrivacyBudgetBelowOneRoundIsRefusedByTheCoordinator) {
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = 2\ndim = 3\n[algorithm]\nnames = [\"fedavg\"]\n[participation]\nrate = 0.5\n"
      "[privacy]\nmechanism = \"central\"\nnoise_multiplier = 1.0\nepsilon_budget = 0.5\n");
  Provision(dir_ / "keys", 2);
  const pid_t co = StartCoordinator(cfg, 0, {});
  EXPECT_EQ(Wait(co, 30000), 2);
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("privacy.epsilon_budget 0.5 is below the epsilon of a single round"), std::string::npos) << log;
}


// A device that does not clip (fedrt-test-device --unclipped-from 1: its
// updates times 10 from round 2 on) is dropped from each such round as if it
// had not reported, logged once, and the run goes on: the rounds before are
// the simulator's, bit for bit; the later ones aggregate the others.
TEST_F(NetTest, PrivacyUnclippedDeviceIsDroppedAndLoggedOnce) {
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = 4\ndim = 5\n[algorithm]\nnames = [\"fedavg\"]\nstep = 0.05\n"
      "local_steps = 10\n[run]\nrounds = 4\nseed = 3\n[network]\ndeadline_ms = 30000\nquorum = 0.5\n"
      "start_timeout_ms = 60000\n[privacy]\nmechanism = \"central\"\nclip = 0.05\nnoise_multiplier = 1.0\n"
      "test_seed = 11\n");
  Provision(dir_ / "keys", 4);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < 3; ++i) StartDevice(i, port);
  StartDevice(3, port, {"--unclipped-from", "1"});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");

  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "rejected device=dev0003 alg=0 reason=malformed: update longer than privacy.clip 0.05"), 1u)
      << log;
  EXPECT_EQ(Count(log, "round=4 agents=3/4"), 1u) << log;  // full participation: the liar is missing
  const auto fleet_csv = privacy_fleet::Lines(dir_ / "out" / "metrics.csv");
  const auto sim_csv = privacy_fleet::Lines(dir_ / "sim" / "metrics.csv");
  ASSERT_EQ(fleet_csv.size(), 6u);
  ASSERT_EQ(sim_csv.size(), 6u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(Cells(fleet_csv[i])[4], "3") << fleet_csv[i];  // agents
  for (const RoundRecord& r : Rounds())
    if (r.round >= 1) EXPECT_EQ(r.agents, 3u) << "round " << r.round;
}


// Adaptive clipping across a coordinator restart: the clip C_t is part of
// the stored server state and the test_seed stream resumes after d + 1
// draws per committed round (the sum's d, then the count's), so a fleet
// stopped after round 3 and restarted on its state db ends with the
// simulator's metrics.csv line for line, clip column included. d = 6 is
// even: the normals come in pairs (privacy/gaussian_noise.h), so d + 1
// draws take one pair more than d, and a resume that skipped d per round
// would shift the stream (with d odd the count's draw is the spare half of
// the last pair, and the two skips are the same).
TEST_F(NetTest, PrivacyAdaptiveClipResumesAfterARestart) {
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = 6\ndim = 6\n[algorithm]\nnames = [\"fedavg\"]\nstep = 0.05\n"
      "local_steps = 10\n[participation]\nrate = 0.7\n[run]\nrounds = 6\nseed = 3\n[network]\ndeadline_ms = 30000\n"
      "quorum = 1.0\nstart_timeout_ms = 60000\n[privacy]\nmechanism = \"central\"\nclip = 0.05\n"
      "noise_multiplier = 0.4\nadaptive_quantile = 0.5\ntest_seed = 11\n");
  Provision(dir_ / "keys", 6);
  const int port = FreePort();
  pid_t co = StartCoordinator(cfg, port, {"--stop-after-rounds", "3"});
  ASSERT_EQ(WaitPort(), port) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < 6; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  ASSERT_EQ(Rounds().size(), 3u);
  co = StartCoordinator(cfg, port, {}, "coordinator.restart.log");
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.restart.log");
  const std::string again = ReadFile(dir_ / "coordinator.restart.log");
  EXPECT_EQ(Count(again, "privacy alg=fedavg run=0 round=4 "), 1u) << again;
  EXPECT_EQ(Count(again, "privacy alg=fedavg run=0 round=3 "), 0u) << again;
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
  const auto fleet_csv = privacy_fleet::Lines(dir_ / "out" / "metrics.csv");
  const auto sim_csv = privacy_fleet::Lines(dir_ / "sim" / "metrics.csv");
  ASSERT_EQ(sim_csv.size(), 8u);
  EXPECT_EQ(sim_csv[0], "algorithm,run,round,error,agents,bits_up,bits_down,epsilon,clip");
  ASSERT_EQ(fleet_csv.size(), sim_csv.size()) << ReadFile(dir_ / "out" / "metrics.csv");
  for (size_t i = 0; i < sim_csv.size(); ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  EXPECT_NE(Cells(sim_csv[7])[8], Cells(sim_csv[1])[8]) << "the clip moved";
}

}  // namespace fedrt::net::testing
