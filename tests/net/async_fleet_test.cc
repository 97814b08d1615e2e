// Buffered asynchronous rounds on the real fleet (docs/async.md):
// fedrt-coordinator and 10 fedrt-device processes over TLS on loopback.
// Under --virtual-clock the coordinator hands out jobs and takes updates in
// the order of the simulator's virtual clock: metrics.csv (errors, updates
// per step, bits, time_s) equals fedrt-sim's line for line, for FedAvg,
// FedProx and Scaffold, plain and with 4-level dithering, FedAvg and FedProx
// under SecAgg+ (one secure group per buffer: the coordinator sees receipts
// and masked inputs, never an update) and under central DP-FedAvg (noise
// per step from privacy.test_seed, epsilon per step), on lognormal devices
// online a few hours a day. In real time every step still takes K
// updates and the run completes; bad combinations are refused by name.
#include <string>
#include <vector>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace async_fleet {

constexpr int kAgents = 10, kSteps = 12;
const char* kSecure = "[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\nsecure_aggregation = true\n";

std::string Experiment(const std::string& extra) {
  // Scaffold weighs dx alone, which a device's masked input cannot: not under
  // SecAgg+; DP-FedAvg runs FedAvg and FedProx only (docs/async.md).
  const bool secure = extra.find("secure_aggregation") != std::string::npos;
  const bool dp = extra.find("[privacy]") != std::string::npos;
  return "[problem]\nkind = \"lsq\"\nagents = 10\ndim = 5\nsamples = 50\nconcept_shift = 1.0\nseed = 3\n"
         "[algorithm]\nnames = [\"fedavg\", \"fedprox\"" +
         std::string(dp ? "" : secure ? ", \"fedprox-exact\"" : ", \"scaffold\"") +
         "]\nstep = 0.02\nlocal_steps = 10\nbatch = 4\n"
         "mode = \"async\"\nbuffer = 3\nconcurrency = 5\nmax_staleness = 4\nstaleness_exponent = 0.5\n"
         "[run]\nrounds = " + std::to_string(kSteps) + "\nruns = 2\nseed = 1\n"
         "[devices]\nspeed = { distribution = \"lognormal\", mu = 0.0, sigma = 0.7 }\n"
         "bandwidth_mbps = { distribution = \"lognormal\", mu = 1.0, sigma = 0.5 }\navailability = \"diurnal\"\n"
         "[network]\nstart_timeout_ms = 60000\n" + extra;
}

class AsyncFleetTest : public NetTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(AsyncFleetTest, VirtualClockFleetEqualsTheSimulator) {
  const auto cfg = WriteExperiment(Experiment(GetParam()));
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {"--virtual-clock"});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
  const auto fleet_csv = ReadLines(dir_ / "out" / "metrics.csv"), sim_csv = ReadLines(dir_ / "sim" / "metrics.csv");
  const bool dp = std::string(GetParam()).find("[privacy]") != std::string::npos;
  const size_t algorithms = dp ? 2 : 3;
  ASSERT_EQ(sim_csv.size(), 1u + algorithms * 2 * (kSteps + 1));
  ASSERT_EQ(fleet_csv.size(), sim_csv.size());
  EXPECT_NE(sim_csv[0].find(",time_s"), std::string::npos);
  if (dp) EXPECT_NE(sim_csv[0].find(",epsilon"), std::string::npos);
  for (size_t i = 0; i < sim_csv.size(); ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "coordinator step alg="), algorithms * 2 * kSteps) << log;
  EXPECT_GT(Count(log, "staleness_max=1") + Count(log, "staleness_max=2") + Count(log, "staleness_max=3"), 0u) << log;
  if (std::string(GetParam()).find("secure") != std::string::npos)  // one secure group per buffer
    for (const RoundRecord& r : Rounds()) EXPECT_EQ(r.closed_by, "secagg") << "step " << r.round;
}

const char* kCentralDp = "[privacy]\nmechanism = \"central\"\nclip = 1.0\nnoise_multiplier = 1.0\ntest_seed = 5\n";

INSTANTIATE_TEST_SUITE_P(Async, AsyncFleetTest,
                         ::testing::Values("", "[compression]\nquantizer = \"dither\"\nlevels = 4\n", kSecure, kCentralDp),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           const std::string p = i.param;
                           return p.empty()                                ? std::string("plain")
                                  : p.find("secure") != std::string::npos  ? std::string("secagg")
                                  : p.find("privacy") != std::string::npos ? std::string("central_dp")
                                                                           : std::string("dither");
                         });

// In real time (no virtual clock): three devices are 40 ms slower per job, so
// arrivals interleave; every step still takes K = 3 updates, each logged with
// its staleness, and the run ends with every step committed.
TEST_F(NetTest, AsyncFleetInRealTimeTakesKUpdatesPerStep) {
  const auto cfg = WriteExperiment(Experiment(""));
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, i < 3 ? std::vector<std::string>{"--delay-ms", "40"} : std::vector<std::string>{});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "coordinator step alg="), 3u * 2 * kSteps) << log;
  EXPECT_NE(log.find("[devices] describes simulated devices"), std::string::npos) << log;
  const auto csv = ReadLines(dir_ / "out" / "metrics.csv");
  ASSERT_EQ(csv.size(), 1u + 3 * 2 * (kSteps + 1));
  for (size_t i = 1; i < csv.size(); ++i) {
    const auto cells = Cells(csv[i]);
    EXPECT_EQ(cells[4], cells[2] == "0" ? "0" : "3") << csv[i];  // agents: K updates per step
  }
  for (const RoundRecord& r : Rounds()) EXPECT_EQ(r.agents, 3u);
}

// Under SecAgg+ in real time, three devices 40 ms slower: every buffer's
// group runs its five phases over the network while other devices train,
// every step is a secure group's sum of K = 3 masked inputs, and no SecAgg+
// message is refused (no group forms after a run's last step).
TEST_F(NetTest, AsyncFleetUnderSecAggInRealTimeStepsOnEveryBuffer) {
  const auto cfg = WriteExperiment(Experiment(kSecure));
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, i < 3 ? std::vector<std::string>{"--delay-ms", "40"} : std::vector<std::string>{});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "coordinator step alg="), 3u * 2 * kSteps) << log;
  // No SecAgg+ message is refused (a slow device's receipt for a job its run
  // ended before may be: it is stale, as a late update of a closed round).
  EXPECT_EQ(Count(log, "secagg message="), 0u) << log;
  for (const RoundRecord& r : Rounds()) {
    EXPECT_EQ(r.agents, 3u) << "step " << r.round;
    EXPECT_EQ(r.closed_by, "secagg") << "step " << r.round;
  }
}

// A device with valid keys that takes a job and answers far too late (3 s
// per update, deadline 200 ms, 300 steps of about 1 ms each): its job gives
// its slot back at the deadline, the event is logged once, and the other
// nine devices fill every step.
TEST_F(NetTest, AsyncFleetGivesASilentDevicesSlotBackAtTheDeadline) {
  std::string exp = Experiment("deadline_ms = 200\n");
  const std::string rounds = "rounds = " + std::to_string(kSteps);
  exp.replace(exp.find(rounds), rounds.size(), "rounds = 300");
  const std::string runs = "runs = 2", names = "names = [\"fedavg\", \"fedprox\", \"scaffold\"]";
  exp.replace(exp.find(runs), runs.size(), "runs = 1");
  exp.replace(exp.find(names), names.size(), "names = [\"fedavg\"]");
  const auto cfg = WriteExperiment(exp);
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, i == 4 ? std::vector<std::string>{"--delay-ms", "3000"} : std::vector<std::string>{});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "coordinator step alg="), 300u) << log;
  EXPECT_EQ(Count(log, "job_timeout alg=fedavg run=0 device_index=4"), 1u) << log;
  EXPECT_EQ(Count(log, "job_timeout"), 1u) << log;
  for (const RoundRecord& r : Rounds()) EXPECT_EQ(r.agents, 3u);
}

// --virtual-clock belongs to asynchronous runs; async does not run behind gateways yet.
TEST_F(NetTest, AsyncFleetRefusesWhatItCannotRun) {
  const auto sync_cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = 2\ndim = 3\n[algorithm]\nnames = [\"fedavg\"]\n[run]\nrounds = 2\n");
  Provision(dir_ / "keys", 2);
  const pid_t co = StartCoordinator(sync_cfg, 0, {"--virtual-clock"});
  EXPECT_EQ(Wait(co, 30000), 2);
  EXPECT_NE(ReadFile(dir_ / "coordinator.log").find("--virtual-clock orders the jobs of algorithm.mode = \"async\""),
            std::string::npos)
      << ReadFile(dir_ / "coordinator.log");
}

}  // namespace async_fleet
}  // namespace fedrt::net::testing
