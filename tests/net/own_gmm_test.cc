// Gaussian mixtures on the devices' own points (docs/data.md, "Gaussian
// mixtures"): each fedrt-device reads only its CSV shard (no label column),
// runs FedEM / VR-FedEM local statistics on it and reports its mean negative
// log-likelihood; the fleet's global iterates and metrics.csv equal the
// simulator's on the same shards. A shard with a bad cell stops its device at
// start with file:line:column, and the others run on.
#include <cmath>
#include <random>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace own_gmm {

constexpr int kAgents = 4, kRounds = 6;

class OwnGmmTest : public NetTest {
 protected:
  // Non-IID: agent c draws a share of its points from the cluster around
  // (-3, 1) and the rest from (3, -1); shares and sizes differ per agent.
  fs::path WriteShards() {
    const fs::path dir = dir_ / "shards";
    fs::create_directories(dir);
    std::mt19937_64 gen(11);
    std::normal_distribution<double> z(0.0, 1.0);
    const double share[kAgents] = {0.85, 0.15, 0.5, 0.65};
    for (int c = 0; c < kAgents; ++c) {
      std::ofstream f(dir / ("device-" + std::to_string(c) + ".csv"));
      f << "temperature,vibration\n";
      const int n = 50 + 10 * c;
      for (int i = 0; i < n; ++i) {
        const bool left = i < share[c] * n;
        f << (left ? -3.0 : 3.0) + z(gen) << ',' << (left ? 1.0 : -1.0) + z(gen) << '\n';
      }
    }
    return dir;
  }
  fs::path Experiment() {
    return WriteExperiment(
        "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = \"gmm\"\ncomponents = 2\n"
        "[algorithm]\nnames = [\"fedem\", \"vr-fedem\"]\n[gmm]\nem_step = 0.7\nbatch = 12\ninner_iters = 3\n"
        "[run]\nrounds = " +
        std::to_string(kRounds) + "\nseed = 5\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\nquorum = 0.5\n");
  }
};

TEST_F(OwnGmmTest, TheFleetOnOwnPointsEqualsTheSimulator) {
  const fs::path shards = WriteShards();
  const auto cfg = Experiment();
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, {"--data", (shards / ("device-" + std::to_string(i) + ".csv")).string()});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
  const auto rounds = Rounds();
  for (uint32_t a = 0; a < 2; ++a) {
    int identical = 0, compared = 0;
    const double rel = MaxRelDiff(rounds, SimThetas(cfg, a), a, &identical, &compared);
    std::printf("[own gmm, algorithm %u] rounds compared=%d bit-identical=%d max relative difference=%.3e\n", a,
                compared, identical, rel);
    EXPECT_EQ(compared, kRounds);
    EXPECT_EQ(identical, kRounds);
  }
  const std::string metrics = ReadFile(dir_ / "out" / "metrics.csv");
  EXPECT_EQ(metrics.substr(0, metrics.find('\n')), "algorithm,run,round,error,agents,bits_up,bits_down,train_loss,local_loss");
  EXPECT_EQ(metrics, ReadFile(dir_ / "sim" / "metrics.csv"));
  // Every round: a finite error ||h(Shat_k)||^2 and a finite mean NLL (train_loss) from the devices.
  std::istringstream m(metrics);
  std::string line;
  std::getline(m, line);
  int reported = 0;
  while (std::getline(m, line)) {
    const std::vector<std::string> f = Cells(line);
    ASSERT_EQ(f.size(), 9u) << line;
    EXPECT_TRUE(std::isfinite(std::stod(f[3]))) << line;
    if (f[2] == "0") continue;
    EXPECT_TRUE(std::isfinite(std::stod(f[7])) && std::stod(f[7]) > 0) << line;
    EXPECT_EQ(f[4], std::to_string(kAgents)) << line;
    ++reported;
  }
  EXPECT_EQ(reported, 2 * kRounds);
  const std::string summary = ReadFile(dir_ / "out" / "summary.json");
  EXPECT_EQ(summary.find("true_parameters"), std::string::npos);
  EXPECT_NE(summary.find("Gaussian mixture on the devices' shards"), std::string::npos);
}

TEST_F(OwnGmmTest, ADeviceWithABadCellStopsAndTheRunGoesOn) {
  const fs::path shards = WriteShards();
  const fs::path bad = dir_ / "bad.csv";
  std::ofstream(bad) << "temperature,vibration\n1.5,2\n0.5,warm\n";
  const auto cfg = Experiment();
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  pid_t bad_pid = 0;
  for (int i = 0; i < kAgents; ++i) {
    const fs::path data = i == 2 ? bad : shards / ("device-" + std::to_string(i) + ".csv");
    const pid_t p = StartDevice(i, port, {"--data", data.string()});
    if (i == 2) bad_pid = p;
  }
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Wait(bad_pid, 10000), 1) << "refused: a run failure (docs/cli.md, \"Exit codes\")";
  const std::string dlog = ReadFile(dir_ / "dev0002.log");
  EXPECT_NE(dlog.find(bad.string() + ":3:2 (vibration): 'warm' is not a number"), std::string::npos) << dlog;
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("start devices=3 of 4 refused=1"), std::string::npos) << log;
  EXPECT_EQ(Rounds().size(), 2u * (kRounds + 1));  // each algorithm's rounds and its initial exchange (V_{0,c})
}

}  // namespace own_gmm
}  // namespace fedrt::net::testing
