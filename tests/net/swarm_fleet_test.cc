// fedrt-swarm (bench/fedrt_swarm.cc) against the real coordinator and
// gateways: 200 devices in one process, each its own TLS 1.3 PSK session,
// behind 2 fedrt-gateway processes (device i behind gw(i mod 2)) and flat.
// The devices share one device agent and workspace and keep only their
// session's state region between messages (docs/gateways.md, "Scale on one
// machine"), so partial participation, Scaffold's control variates and the
// compression memory cross seat changes: metrics.csv must equal fedrt-sim's
// line for line, and the coordinator's round lines count its socket bytes.
#include <string>
#include <vector>

#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

constexpr int kAgents = 200, kGateways = 2;

const char* kExperiment =
    "[problem]\nkind = \"lsq\"\nagents = 200\ndim = 5\n[algorithm]\nnames = [\"fedavg\", \"scaffold\"]\n"
    "step = 0.05\nlocal_steps = 10\n[participation]\nrate = 0.7\n[compression]\nquantizer = \"dither\"\n"
    "levels = 4\ncontrol_variates = true\n[run]\nrounds = 4\nruns = 1\nseed = 3\n[network]\ndeadline_ms = 30000\n"
    "quorum = 1.0\nstart_timeout_ms = 60000\n";

class SwarmFleetTest : public NetTest {
 protected:
  void ExpectSimulatorsMetrics(const fs::path& cfg) {
    const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                            dir_ / "sim.log");
    ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
    const auto fleet = ReadLines(dir_ / "out" / "metrics.csv"), simulated = ReadLines(dir_ / "sim" / "metrics.csv");
    ASSERT_GT(simulated.size(), 4u);
    ASSERT_EQ(fleet.size(), simulated.size());
    for (size_t i = 0; i < simulated.size(); ++i) EXPECT_EQ(fleet[i], simulated[i]) << "metrics.csv line " << i + 1;
  }
  // The swarm's devices through `addresses`; its exit code.
  int RunSwarm(const std::string& addresses) {
    const pid_t s = Spawn({Bin("fedrt-swarm"), "--coordinator", addresses, "--keys", (dir_ / "keys").string(),
                           "--connect-rate", "2000"},
                          dir_ / "swarm.log");
    return Wait(s, 120000);
  }
};

TEST_F(SwarmFleetTest, TwoHundredDevicesBehindTwoGatewaysMatchTheSimulator) {
  const auto cfg = WriteExperiment(kExperiment);
  Provision(dir_ / "keys", kAgents);
  const pid_t k = Spawn({Bin("fedrt-keys"), "gateways", "--keys", (dir_ / "keys").string(), "--count",
                         std::to_string(kGateways)},
                        dir_ / "keys-gw.log");
  ASSERT_EQ(Wait(k, 30000), 0) << ReadFile(dir_ / "keys-gw.log");
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  std::string addresses;
  for (int g = 0; g < kGateways; ++g) {
    const std::string id = "gw0" + std::to_string(g);
    const fs::path port_file = dir_ / (id + ".port");
    Spawn({Bin("fedrt-gateway"), "--coordinator", "127.0.0.1:" + std::to_string(port), "--id", id, "--keys",
           (dir_ / "keys" / "gateways" / id).string(), "--port", "0", "--port-file", port_file.string()},
          dir_ / (id + ".log"));
    for (int i = 0; i < 300 && ReadFile(port_file).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int gp = std::atoi(ReadFile(port_file).c_str());
    ASSERT_GT(gp, 0) << ReadFile(dir_ / (id + ".log"));
    addresses += (g ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(gp);
  }
  EXPECT_EQ(RunSwarm(addresses), 0) << ReadFile(dir_ / "swarm.log");
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, " via=gw0"), static_cast<size_t>(kAgents));
  EXPECT_EQ(Count(log, "registered device="), 0u) << "a device connected to the coordinator itself";
  EXPECT_EQ(Count(log, " rx_bytes="), 8u) << "every round line counts the bytes in";
  EXPECT_EQ(Count(log, " rx_bytes=0 "), 0u) << "the gateways' partials came in";
  ExpectSimulatorsMetrics(cfg);
  const std::string swarm = ReadFile(dir_ / "swarm.log");
  EXPECT_NE(swarm.find("done 200 failed 0"), std::string::npos) << swarm;
}

TEST_F(SwarmFleetTest, TwoHundredDevicesAtTheCoordinatorMatchTheSimulator) {
  const auto cfg = WriteExperiment(kExperiment);
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(RunSwarm("127.0.0.1:" + std::to_string(port)), 0) << ReadFile(dir_ / "swarm.log");
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(ReadFile(dir_ / "coordinator.log"), "ready device="), static_cast<size_t>(kAgents));
  ExpectSimulatorsMetrics(cfg);
}

}  // namespace
}  // namespace fedrt::net::testing
