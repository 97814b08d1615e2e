// The real-data example (examples/digits, README there): the digits
// experiment, cut to a few rounds, on a loopback fleet of one native device
// per shard (20), each given only its own shard. Its metrics.csv (error,
// train and local loss, held-out test loss and accuracy per algorithm and
// round) is byte-identical to the simulator's on the same shards.
#include <map>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace digits_example {

constexpr int kDevices = 20;
const std::string kRounds = "6";

class DigitsExampleTest : public NetTest {};

TEST_F(DigitsExampleTest, FleetMetricsEqualTheSimulatorsByteForByte) {
  const fs::path example = fs::path(FEDRT_EXAMPLES_DIR) / "digits";
  const fs::path cfg = example / "experiment.toml";
  ASSERT_TRUE(fs::exists(example / "split" / ("device-" + std::to_string(kDevices - 1) + ".csv")));
  ASSERT_FALSE(fs::exists(example / "split" / ("device-" + std::to_string(kDevices) + ".csv")));
  Provision(dir_ / "keys", kDevices);
  const pid_t co = StartCoordinator(cfg, 0, {"--rounds", kRounds});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kDevices; ++i)
    StartDevice(i, port, {"--data", (example / "split" / ("device-" + std::to_string(i) + ".csv")).string()});
  ASSERT_EQ(Wait(co, 170000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--rounds", kRounds, "--out",
                           (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
  const std::string fleet = ReadFile(dir_ / "out" / "metrics.csv");
  EXPECT_EQ(fleet, ReadFile(dir_ / "sim" / "metrics.csv"));
  // Three algorithms, rounds 0..6, every device a member of every round, and
  // the held-out accuracy of round 6 above the initial model's (x_0 = 0: class 0).
  std::istringstream m(fleet);
  std::string line;
  std::getline(m, line);
  EXPECT_EQ(line, "algorithm,run,round,error,agents,bits_up,bits_down,train_loss,local_loss,test_loss,test_accuracy");
  int rows = 0;
  std::map<std::string, std::pair<double, double>> first_last;
  while (std::getline(m, line)) {
    const std::vector<std::string> f = Cells(line);
    ASSERT_EQ(f.size(), 11u) << line;
    if (f[2] != "0") {
      EXPECT_EQ(f[4], std::to_string(kDevices)) << line;
    }
    auto& fl = first_last[f[0]];
    if (f[2] == "0") fl.first = std::stod(f[10]);
    fl.second = std::stod(f[10]);
    ++rows;
  }
  EXPECT_EQ(rows, 3 * (std::stoi(kRounds) + 1));
  for (const auto& [alg, fl] : first_last) EXPECT_GT(fl.second, fl.first) << alg;
}

}  // namespace digits_example
}  // namespace fedrt::net::testing
