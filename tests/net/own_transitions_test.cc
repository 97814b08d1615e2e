// TD(0) on the devices' own transitions (docs/data.md, "TD(0) transitions"):
// each fedrt-device reads only its shard of (phi(s), reward, phi(s')) rows,
// runs FedLSA / SCAFFLSA local steps on them, and reports its mean squared TD
// error; the fleet's global iterates and metrics.csv equal the simulator's on
// the same shards. A shard whose s' columns are not named next_<feature> stops
// its device at start with the column named, and the others run on.
#include <cmath>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace own_transitions {

constexpr int kAgents = 4, kRounds = 6, kStates = 7;

class OwnTransitionsTest : public NetTest {
 protected:
  // One trajectory per agent of a deterministic-pseudo-random chain on
  // kStates states with features in R^3; rewards differ between agents.
  fs::path WriteShards() {
    const fs::path dir = dir_ / "shards";
    fs::create_directories(dir);
    auto phi = [](int s, int k) { return std::sin(1.3 * s + k) + 0.3 * k; };
    for (int c = 0; c < kAgents; ++c) {
      std::ofstream f(dir / ("device-" + std::to_string(c) + ".csv"));
      f << "speed,load,temp,reward,next_speed,next_load,next_temp\n";
      int s = c % kStates;
      for (int t = 0; t < 40 + 5 * c; ++t) {
        const int n = (s * 3 + t * (c + 1) + (t * t) % 5) % kStates;
        f << phi(s, 0) << ',' << phi(s, 1) << ',' << phi(s, 2) << ',' << std::cos(0.7 * s + c) << ',' << phi(n, 0)
          << ',' << phi(n, 1) << ',' << phi(n, 2) << '\n';
        s = n;
      }
    }
    return dir;
  }
  fs::path Experiment() {
    return WriteExperiment(
        "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\nlabel = \"reward\"\n[model]\nkind = \"td0\"\n"
        "gamma = 0.8\n[algorithm]\nnames = [\"fedlsa\", \"scafflsa\"]\nstep = 0.05\nlocal_steps = 15\n[run]\nrounds = " +
        std::to_string(kRounds) + "\nseed = 5\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\nquorum = 0.5\n");
  }
};

TEST_F(OwnTransitionsTest, TheFleetOnOwnTransitionsEqualsTheSimulator) {
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
    std::printf("[own transitions, algorithm %u] rounds compared=%d bit-identical=%d max relative difference=%.3e\n",
                a, compared, identical, rel);
    EXPECT_EQ(compared, kRounds);
    EXPECT_EQ(identical, kRounds);
  }
  const std::string metrics = ReadFile(dir_ / "out" / "metrics.csv");
  EXPECT_EQ(metrics.substr(0, metrics.find('\n')), "algorithm,run,round,error,agents,bits_up,bits_down,train_loss,local_loss");
  EXPECT_EQ(metrics, ReadFile(dir_ / "sim" / "metrics.csv"));
  // Every round reports a finite mean squared TD error (train_loss) of the broadcast model.
  std::istringstream m(metrics);
  std::string line;
  std::getline(m, line);
  int reported = 0;
  while (std::getline(m, line)) {
    const std::vector<std::string> f = Cells(line);
    ASSERT_EQ(f.size(), 9u) << line;
    if (f[2] == "0") continue;
    EXPECT_TRUE(std::isfinite(std::stod(f[7])) && std::stod(f[7]) > 0) << line;
    ++reported;
  }
  EXPECT_EQ(reported, 2 * kRounds);
}

TEST_F(OwnTransitionsTest, ADeviceWhoseNextStateColumnsAreMisnamedStopsAndTheRunGoesOn) {
  const fs::path shards = WriteShards();
  const fs::path bad = dir_ / "bad.csv";
  std::ofstream(bad) << "speed,load,temp,reward,next_speed,load2,next_temp\n1,2,3,0.5,1,2,3\n";
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
  EXPECT_NE(dlog.find(bad.string() + ":1 (column 'load2'): expected 'next_load'"), std::string::npos) << dlog;
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("start devices=3 of 4 refused=1"), std::string::npos) << log;
  EXPECT_EQ(Rounds().size(), 2u * kRounds);
}

}  // namespace own_transitions
}  // namespace fedrt::net::testing
