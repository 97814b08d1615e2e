// A device with valid keys that poisons the model (docs/security.md, "What a
// malicious device can do to the model"), on the real fleet: fedrt-test-device
// sends an update of 1e308 values in one round, or adds 2^31 to one
// coordinate of its masked input in one SecAgg+ round. The coordinator
// refuses the update (the others' round goes on) or the round's unmasked sum
// (the model stays where it was), logs the event, and every later round's
// error stays finite and near the clean run's.
#include <cmath>
#include <string>
#include <vector>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's helpers stay apart from its unity batch
// neighbours' (cmake/unity_build.cmake).
namespace poison {

double Error(const std::string& line) { return std::stod(Cells(line)[3]); }

}  // namespace poison

// Device 3 sends round 1's update (0-based; the log's round=2) with every
// value 1e308 (finite: before the bound it was taken and the error was inf
// from then on). It is refused and logged once; round 1 aggregates the three
// others; the rounds before are the simulator's line for line and every
// error is finite.
TEST_F(NetTest, PoisonedUpdateOf1e308IsRefusedLoggedAndTheModelStaysFinite) {
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = 4\ndim = 5\n[algorithm]\nnames = [\"fedavg\"]\nstep = 0.05\n"
      "local_steps = 10\n[run]\nrounds = 4\nseed = 3\n[network]\ndeadline_ms = 30000\nquorum = 0.5\n"
      "start_timeout_ms = 60000\n");
  Provision(dir_ / "keys", 4);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < 3; ++i) StartDevice(i, port);
  StartDevice(3, port, {"--update-value", "1,1e308"});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");

  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "rejected device=dev0003 alg=0 reason=malformed: update longer than robustness.max_update_norm"),
            1u)
      << log;
  EXPECT_EQ(Count(log, "round=2 agents=3/4"), 1u) << log;  // the log counts rounds from 1
  const auto fleet_csv = ReadLines(dir_ / "out" / "metrics.csv");
  const auto sim_csv = ReadLines(dir_ / "sim" / "metrics.csv");
  ASSERT_EQ(fleet_csv.size(), 6u);
  ASSERT_EQ(sim_csv.size(), 6u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  for (size_t i = 1; i < 6; ++i) {
    EXPECT_TRUE(std::isfinite(poison::Error(fleet_csv[i]))) << fleet_csv[i];
    EXPECT_LT(poison::Error(fleet_csv[i]), 10 * poison::Error(sim_csv[1]) + 1.0) << fleet_csv[i];
  }
  for (const RoundRecord& r : Rounds()) EXPECT_EQ(r.agents, r.round == 1 ? 3u : 4u) << "round " << r.round;
}

// SecAgg+ with 10 devices of 16-bit inputs: device 3 adds 2^31 to coordinate
// 0 of its masked input in round 1 (before the range check the sum wrapped
// and FedLSA's error went from about 2 to 1.7e8). The unmasked sum lies above
// what 10 honest inputs can reach: round 1 aggregates nothing and the model
// stays where round 0 left it (the same error), the event is logged once,
// round 0 is the clean simulator's and rounds 2 and 3 run on.
TEST_F(NetTest, MaskedInputShiftedBy2To31FailsItsRoundAndTheModelStays) {
  constexpr int kAgents = 10;
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = 10\n[algorithm]\nnames = [\"fedlsa\"]\n"
      "step = 0.01\nlocal_steps = 50\n[run]\nrounds = 4\nseed = 3\n[network]\ndeadline_ms = 10000\nquorum = 1.0\n"
      "start_timeout_ms = 60000\n[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\n"
      "secure_aggregation = true\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, i == 3 ? std::vector<std::string>{"--add-to-masked", "1,0,2147483648"} : std::vector<std::string>{});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");

  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "secagg_failed alg=fedlsa run=0 round=2 reason=secure aggregation: the unmasked sum of "
                       "coordinate 0 is "),
            1u)
      << log;
  EXPECT_EQ(Count(log, "secagg_failed"), 1u) << log;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_EQ(rounds[1].agents, 0u);
  EXPECT_NE(rounds[1].failure.find("a masked input was out of range"), std::string::npos) << rounds[1].failure;
  EXPECT_EQ(rounds[1].error, rounds[0].error) << "the model moved in the refused round";
  const auto fleet_csv = ReadLines(dir_ / "out" / "metrics.csv");
  const auto sim_csv = ReadLines(dir_ / "sim" / "metrics.csv");
  ASSERT_EQ(fleet_csv.size(), 6u);
  ASSERT_EQ(sim_csv.size(), 6u);
  for (size_t i = 1; i < 3; ++i)  // the initial row and round 0
    EXPECT_EQ(poison::Error(fleet_csv[i]), poison::Error(sim_csv[i])) << fleet_csv[i] << " / " << sim_csv[i];
  for (size_t i = 3; i < 6; ++i) {  // bounded: within the clean run's range (the attack made it 1.7e8)
    EXPECT_TRUE(std::isfinite(poison::Error(fleet_csv[i]))) << fleet_csv[i];
    EXPECT_LT(poison::Error(fleet_csv[i]), 2 * poison::Error(sim_csv[1])) << fleet_csv[i];
  }
  EXPECT_EQ(rounds[2].agents, static_cast<uint32_t>(kAgents));
  EXPECT_EQ(rounds[3].agents, static_cast<uint32_t>(kAgents));
}

}  // namespace fedrt::net::testing
