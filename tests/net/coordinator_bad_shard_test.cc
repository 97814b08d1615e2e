// A bad shard in the coordinator's copy of the devices' data (docs/data.md,
// "A bad shard in the coordinator's copy") refuses that device only, as a
// device with a bad shard of its own is refused: the coordinator names the
// file once, tells the device at its Hello, and the others run on. Their
// iterates equal the simulator's over the shards that loaded, at every round.
#include <cmath>

#include <fmt/format.h>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace coordinator_bad_shard {

constexpr int kAgents = 5, kBad = 2, kRounds = 4;

// Agent c's shard of a least-squares problem in R^2 (full batch, full
// participation, no compression: nothing depends on the agent's index).
std::string Shard(int c) {
  std::string s = "x1,x2,label\n";
  for (int j = 0; j < 12 + 2 * c; ++j) {
    const double a = std::sin(0.7 * j + c), b = std::cos(1.1 * j - 0.5 * c);
    s += fmt::format("{},{},{}\n", a, b, 0.8 * a - 0.3 * b + 0.1 * c + 0.05 * std::sin(3.0 * j));
  }
  return s;
}

std::string Experiment(const std::string& train, int agents) {
  return fmt::format(
      "[problem]\nagents = {}\n[data]\nformat = \"csv\"\ntrain = \"{}\"\n[model]\nkind = \"least_squares\"\nl2 = 0.01\n"
      "[algorithm]\nnames = [\"fedavg\"]\nstep = 0.1\nlocal_steps = 5\n[run]\nrounds = {}\nseed = 4\n[network]\n"
      "deadline_ms = 30000\nstart_timeout_ms = 60000\nquorum = 1.0\n",
      agents, train, kRounds);
}

TEST_F(NetTest, ABadShardInTheCoordinatorsCopyRefusesThatDeviceAndTheOthersRunOn) {
  // The coordinator's copy (shards/), agent 2's corrupt; each device's own copy (own/), all good;
  // the reference: the simulator over the four good shards, renumbered (ref/).
  for (const char* d : {"shards", "own", "ref"}) fs::create_directories(dir_ / d);
  for (int c = 0, r = 0; c < kAgents; ++c) {
    std::ofstream(dir_ / "own" / fmt::format("device-{}.csv", c)) << Shard(c);
    std::ofstream(dir_ / "shards" / fmt::format("device-{}.csv", c)) << (c == kBad ? "x1,x2,label\n0.5,oops,1\n" : Shard(c));
    if (c != kBad) std::ofstream(dir_ / "ref" / fmt::format("device-{}.csv", r++)) << Shard(c);
  }
  const fs::path cfg = WriteExperiment(Experiment("shards/device-{id}.csv", kAgents));
  const fs::path ref = dir_ / "reference.toml";
  std::ofstream(ref) << Experiment("ref/device-{id}.csv", kAgents - 1);
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  pid_t bad = 0;
  for (int i = 0; i < kAgents; ++i) {
    const pid_t p = StartDevice(i, port, {"--data", (dir_ / "own" / fmt::format("device-{}.csv", i)).string()});
    if (i == kBad) bad = p;
  }
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Wait(bad, 10000), 1) << "refused: a run failure (docs/cli.md, \"Exit codes\")";

  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "device-2.csv"), 1u) << "the bad file is named once\n" << log;
  EXPECT_NE(log.find("refused device=dev0002 index=2 stage=data reason=the coordinator's copy of its shard does not "
                     "read: " + (dir_ / "shards/device-2.csv").string() + ":2"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("loaded=4 of 5 (x_star and error over the shards that loaded)"), std::string::npos) << log;
  EXPECT_NE(log.find("start devices=4 of 5 refused=1"), std::string::npos) << log;
  const std::string dlog = ReadFile(dir_ / "dev0002.log");
  EXPECT_NE(dlog.find("the coordinator's copy of this device's shard does not read"), std::string::npos) << dlog;

  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(kRounds));
  for (const auto& r : rounds) EXPECT_EQ(r.agents, 4u);
  int identical = 0, compared = 0;
  const double rel = MaxRelDiff(rounds, SimThetas(ref, 0), 0, &identical, &compared);
  std::printf("[bad shard at the coordinator] rounds compared=%d bit-identical=%d max relative difference=%.3e\n",
              compared, identical, rel);
  EXPECT_EQ(compared, kRounds);
  EXPECT_EQ(identical, kRounds) << "the four devices' iterates are the simulator's over the four good shards";
}

// Softmax without model.classes (docs/data.md): the coordinator counts K over
// the shards that read, and refuses the bad one's device as above.
TEST_F(NetTest, ACoordinatorCountsTheClassesOverTheShardsThatRead) {
  fs::create_directories(dir_ / "shards");
  for (int c = 0; c < kAgents; ++c) {
    std::string s = "x1,x2,label\n";
    for (int j = 0; j < 9; ++j) s += fmt::format("{},{},{}\n", std::sin(j + c), std::cos(2.0 * j - c), (j + c) % 3);
    std::ofstream(dir_ / "shards" / fmt::format("device-{}.csv", c)) << (c == kBad ? "x1,x2,label\n1,2\n" : s);
  }
  const fs::path cfg = WriteExperiment(
      "[problem]\nagents = 5\n[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = "
      "\"softmax\"\nl2 = 0.01\n[algorithm]\nnames = [\"fedavg\"]\n[run]\nrounds = 1\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  ASSERT_GT(WaitPort(), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("model.classes = 3: counted from the labels (the largest is 2) of the 4 shards"), std::string::npos)
      << log;
  EXPECT_NE(log.find("refused device=dev0002 index=2 stage=data reason="), std::string::npos) << log;
  Kill(co);
}

}  // namespace coordinator_bad_shard
}  // namespace fedrt::net::testing
