// Softmax regression on the devices' own shards (docs/data.md, "Models"): the
// task carries the classes and the intercept, each fedrt-device trains on its
// shard, and the fleet's global iterate, metrics.csv (train, local and test
// losses, test accuracy) equal the simulator's bit for bit. A device whose
// shard has a label outside 0..K-1 stops at start naming file, line and
// column, and the run goes on without it. Native devices take tasks of the
// Linux wire profile, beyond the microcontroller's d.
#include <cmath>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace softmax_fleet {

constexpr int kAgents = 5, kRounds = 4, kClasses = 3;

class SoftmaxFleetTest : public NetTest {
 protected:
  // Three classes in the plane, each device holding mostly one of them.
  fs::path WriteShards(int features) {
    const fs::path dir = dir_ / "shards";
    fs::create_directories(dir);
    auto row = [features](std::ostream& f, int j, int k) {
      for (int i = 0; i < features; ++i)
        f << std::cos(2.1 * k + 0.7 * i) + 0.6 * std::sin(1.7 * j + 3.1 * i + k) << ',';
      f << k << '\n';
    };
    auto header = [features](std::ostream& f) {
      for (int i = 0; i < features; ++i) f << 'p' << i << ',';
      f << "label\n";
    };
    for (int c = 0; c < kAgents; ++c) {
      std::ofstream f(dir / ("device-" + std::to_string(c) + ".csv"));
      header(f);
      for (int j = 0; j < 18 + 4 * c; ++j) row(f, j + 31 * c, j % 4 == 0 ? (j / 4) % kClasses : c % kClasses);
    }
    std::ofstream t(dir_ / "test.csv");
    header(t);
    for (int j = 0; j < 21; ++j) row(t, 1000 + j, j % kClasses);
    return dir;
  }
  fs::path Experiment(const std::string& extra = "") {
    return WriteExperiment(
        "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\ntest = \"test.csv\"\n"
        "[model]\nkind = \"softmax\"\nclasses = 3\nl2 = 0.01\n"
        "[algorithm]\nnames = [\"fedavg\", \"scaffold\", \"fedprox\"]\nstep = 0.2\nlocal_steps = 6\nbatch = 3\nprox_mu = 0.1\n"
        "[run]\nrounds = " + std::to_string(kRounds) + "\nseed = 5\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n" +
        extra);
  }
  // Runs the fleet on `features`-dimensional shards and compares it with the simulator.
  void FleetEqualsSimulator(int features) {
    const fs::path shards = WriteShards(features);
    const auto cfg = Experiment("quorum = 1.0\n");
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
    const std::string log = ReadFile(dir_ / "coordinator.log");
    const int d = kClasses * (features + 1);
    EXPECT_NE(ReadFile(dir_ / "sim.log").find("softmax regression (3 classes, " + std::to_string(features) +
                                               " features + intercept"),
              std::string::npos);
    const auto rounds = Rounds();
    for (uint32_t a = 0; a < 3; ++a) {
      int identical = 0, compared = 0;
      const double rel = MaxRelDiff(rounds, SimThetas(cfg, a), a, &identical, &compared);
      std::printf("[softmax d=%d, algorithm %u] rounds compared=%d bit-identical=%d max relative difference=%.3e\n", d,
                  a, compared, identical, rel);
      EXPECT_EQ(compared, kRounds);
      EXPECT_EQ(identical, kRounds);
    }
    for (const auto& r : rounds) ASSERT_EQ(r.theta.size(), static_cast<size_t>(d));
    const std::string metrics = ReadFile(dir_ / "out" / "metrics.csv");
    EXPECT_EQ(metrics, ReadFile(dir_ / "sim" / "metrics.csv"));
    // The test accuracy column holds fractions of the 21 held-out examples.
    std::istringstream m(metrics);
    std::string line;
    std::getline(m, line);
    int rows = 0;
    while (std::getline(m, line)) {
      const double acc = std::stod(line.substr(line.rfind(',') + 1));
      EXPECT_NEAR(acc * 21, std::round(acc * 21), 1e-9) << line;
      ++rows;
    }
    EXPECT_EQ(rows, 3 * (kRounds + 1));
    const std::string summary = ReadFile(dir_ / "out" / "summary.json");
    EXPECT_NE(summary.find("\"centralized_test_accuracy\""), std::string::npos);
  }
};

TEST_F(SoftmaxFleetTest, FleetEqualsTheSimulatorBitForBit) { FleetEqualsSimulator(2); }

// The Linux wire profile (task/limits.h): d = 3 (216 + 1) = 651 is above
// the microcontroller bound kMaxDim, and the coordinator and the native
// devices exchange its frames (a Scaffold broadcast is 2 d float64).
TEST_F(SoftmaxFleetTest, NativeDevicesRunATaskBeyondTheMicrocontrollerBound) {
  static_assert(3 * (216 + 1) > task::kMaxDim, "the task must exceed the microcontroller profile");
  FleetEqualsSimulator(216);
}

TEST_F(SoftmaxFleetTest, LabelOutsideTheClassesStopsTheDeviceAndTheRunGoesOn) {
  const fs::path shards = WriteShards(2);
  const fs::path bad = dir_ / "bad.csv";
  std::ofstream(bad) << "p0,p1,label\n0.5,1,2\n0.25,1,3\n";
  const auto cfg = Experiment("quorum = 0.5\n");
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
  EXPECT_NE(dlog.find(bad.string() + ":3:3 (label): label 3 is not a class of softmax regression with 3 classes (an integer 0..2)"),
            std::string::npos)
      << dlog;
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("start devices=4 of 5 refused=1"), std::string::npos) << log;
  for (const auto& r : Rounds()) EXPECT_LE(r.agents, 4u);
}

// Without model.classes the programs that read every shard count K from the
// labels (docs/data.md, "Experiment file"): the simulator and the coordinator
// say so and run exactly the experiment with classes = 3; a coordinator
// without the shards asks for the key by name (exit code 2).
TEST_F(SoftmaxFleetTest, WithoutClassesTheProgramsThatReadTheShardsCountThem) {
  const fs::path shards = WriteShards(2);
  const fs::path with = Experiment("quorum = 1.0\n");
  fs::rename(with, dir_ / "with_classes.toml");
  std::string body = ReadFile(dir_ / "with_classes.toml");
  body.erase(body.find("classes = 3\n"), 12);
  const fs::path cfg = WriteExperiment(body);
  const std::string counted = "model.classes = 3: counted from the labels (the largest is 2) of the 5 shards and data.test";

  for (const fs::path& c : {cfg, dir_ / "with_classes.toml"}) {
    const std::string name = c.stem().string();
    const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", c.string(), "--out", (dir_ / name).string(), "--no-plot"},
                            dir_ / (name + ".log"));
    ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / (name + ".log"));
  }
  EXPECT_NE(ReadFile(dir_ / "experiment.log").find(counted), std::string::npos) << ReadFile(dir_ / "experiment.log");
  EXPECT_EQ(ReadFile(dir_ / "with_classes.log").find("counted from the labels"), std::string::npos);
  EXPECT_EQ(ReadFile(dir_ / "experiment" / "metrics.csv"), ReadFile(dir_ / "with_classes" / "metrics.csv"));

  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, {"--data", (shards / ("device-" + std::to_string(i) + ".csv")).string()});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(ReadFile(dir_ / "coordinator.log"), counted), 1u) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(ReadFile(dir_ / "out" / "metrics.csv"), ReadFile(dir_ / "with_classes" / "metrics.csv"));

  const fs::path blind = dir_ / "blind.toml";
  std::string blind_body = body;
  blind_body.insert(blind_body.find("[model]"), "coordinator_reads_shards = false\n[problem]\nagents = 5\n");
  std::ofstream(blind) << blind_body;
  const pid_t no_shards = StartCoordinator(blind, 0, {}, "blind.log");
  EXPECT_EQ(Wait(no_shards, 60000), 2) << ReadFile(dir_ / "blind.log");
  EXPECT_NE(ReadFile(dir_ / "blind.log").find("fedrt-coordinator: error: model.classes is missing: a coordinator without "
                                              "the shards (data.coordinator_reads_shards = false) cannot count the "
                                              "classes from the labels; set [model] classes = K (labels 0..K-1)"),
            std::string::npos)
      << ReadFile(dir_ / "blind.log");
}

}  // namespace softmax_fleet
}  // namespace fedrt::net::testing
