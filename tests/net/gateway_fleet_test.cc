// Gateways on the real fleet (docs/gateways.md): fedrt-coordinator, three
// fedrt-gateway processes and twelve fedrt-device processes over TLS on
// loopback, device i behind gateway i mod 3. Every family, plain, compressed
// (dithering with compression memory, a compressed downlink for EM) and with
// SecAgg+: metrics.csv equals fedrt-sim's line for line, while the
// coordinator registers no device itself and holds the three gateways'
// connections only. A gateway killed mid-run: the round in flight closes
// (with the devices that came back in time, or by its deadline and quorum),
// the gateway's devices come back through their fallback address (the
// coordinator) and later rounds include them.
#include <dirent.h>

#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "net_harness.h"

namespace fedrt::net::testing {
namespace gateway_fleet {

constexpr int kAgents = 12, kGateways = 3, kRounds = 5;

struct Case {
  std::string name;
  std::string experiment;
  std::string compression;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const char* kOpt = "[problem]\nkind = \"lsq\"\nagents = 12\ndim = 5\n[algorithm]\nnames = [\"fedavg\", \"scaffold\", "
                   "\"fedprox\", \"fedavg-rr\"]\nstep = 0.05\nlocal_steps = 10\n";
const char* kEm = "[problem]\nkind = \"gmm\"\nagents = 12\n[algorithm]\nnames = [\"fedem\", \"fedem-naive\", "
                  "\"vr-fedem\"]\n[gmm]\nbatch = 20\n";
const char* kLsa = "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = 12\n[algorithm]\nnames = "
                   "[\"fedlsa\", \"scafflsa\", \"scafflsa-prob\"]\nstep = 0.01\nlocal_steps = 100\n";
const char* kMemory = "[compression]\nquantizer = \"dither\"\nlevels = 4\ncontrol_variates = true\n";
const char* kDown = "[compression]\nquantizer = \"dither\"\nlevels = 4\ndownlink = true\n";
const char* kSecure = "[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\nsecure_aggregation = true\n";

std::vector<Case> Cases() {
  return {{"sgd_plain", kOpt, ""}, {"sgd_memory", kOpt, kMemory}, {"sgd_secagg", kOpt, kSecure},
          {"em_plain", kEm, ""},   {"em_downlink", kEm, kDown},   {"em_secagg", kEm, kSecure},
          {"lsa_plain", kLsa, ""}, {"lsa_memory", kLsa, kMemory}, {"lsa_secagg", kLsa, kSecure}};
}

class GatewayFleetTest : public NetTest {
 protected:
  // The devices' keys, KEYS/gateways.tsv and a folder per gateway (before the coordinator starts: it reads them).
  void ProvisionWithGateways() {
    Provision(dir_ / "keys", kAgents);
    const pid_t k = Spawn({Bin("fedrt-keys"), "gateways", "--keys", (dir_ / "keys").string(), "--count",
                           std::to_string(kGateways)},
                          dir_ / "keys.log");
    ASSERT_EQ(Wait(k, 30000), 0) << ReadFile(dir_ / "keys.log");
  }
  // Keys (devices and gateways), the coordinator and the gateways: false when either did not start.
  bool StartCoordinatorAndGateways(const fs::path& cfg, pid_t* co, int* port, std::vector<int>* gw) {
    ProvisionWithGateways();
    *co = StartCoordinator(cfg, 0, {});
    *port = WaitPort();
    if (*port <= 0) return false;
    *gw = StartGateways(*port);
    return gw->size() == static_cast<size_t>(kGateways);
  }
  // fedrt-sim on the same experiment: the fleet's metrics.csv equals its line for line.
  void ExpectSimulatorsMetrics(const fs::path& cfg, size_t min_lines = 2) {
    const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                            dir_ / "sim.log");
    ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
    const auto fleet_csv = ReadLines(dir_ / "out" / "metrics.csv"), sim_csv = ReadLines(dir_ / "sim" / "metrics.csv");
    ASSERT_GE(sim_csv.size(), min_lines);
    ASSERT_EQ(fleet_csv.size(), sim_csv.size());
    for (size_t i = 0; i < sim_csv.size(); ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  }
  // G gateways on free ports.
  std::vector<int> StartGateways(int coordinator_port) {
    std::vector<int> ports;
    for (int g = 0; g < kGateways; ++g) {
      const std::string id = "gw0" + std::to_string(g);
      const fs::path port_file = dir_ / (id + ".port");
      fs::remove(port_file);
      gateways_.push_back(Spawn({Bin("fedrt-gateway"), "--coordinator", "127.0.0.1:" + std::to_string(coordinator_port),
                                 "--id", id, "--keys", (dir_ / "keys" / "gateways" / id).string(), "--port", "0",
                                 "--port-file", port_file.string()},
                                dir_ / (id + ".log")));
      for (int i = 0; i < 300 && ReadFile(port_file).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ports.push_back(std::atoi(ReadFile(port_file).c_str()));
      EXPECT_GT(ports.back(), 0) << ReadFile(dir_ / (id + ".log"));
    }
    return ports;
  }
  // Device i with its PSK, through `address` (HOST:PORT[,HOST:PORT...]).
  pid_t StartPskDevice(int i, const std::string& address, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {extra.empty() ? Bin("fedrt-device") : TestBin("fedrt-test-device"),
                                     "--coordinator", address, "--id", Id(i), "--key",
                                     (dir_ / "keys" / "devices" / Id(i) / "device.psk").string(), "--state",
                                     (dir_ / Id(i)).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return Spawn(args, dir_ / (Id(i) + ".log"));
  }
  // Open TCP sockets of a process (its listening socket included).
  static int Sockets(pid_t pid) {
    int n = 0;
    const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
    for (const auto& e : fs::directory_iterator(fds, std::filesystem::directory_options::skip_permission_denied)) {
      std::error_code ec;
      const fs::path target = fs::read_symlink(e.path(), ec);
      if (!ec && target.string().rfind("socket:", 0) == 0) ++n;
    }
    return n;
  }
  std::vector<pid_t> gateways_;
};

class GatewayFamilies : public GatewayFleetTest, public ::testing::WithParamInterface<Case> {};

TEST_P(GatewayFamilies, MetricsEqualTheSimulatorsThroughThreeGateways) {
  const Case& c = GetParam();
  const auto cfg = WriteExperiment(c.experiment + "[participation]\nrate = 0.7\n[run]\nrounds = " +
                                   std::to_string(kRounds) +
                                   "\nruns = 1\nseed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\n"
                                   "start_timeout_ms = 60000\n" + c.compression);
  pid_t co = 0;
  int port = 0;
  std::vector<int> gw;
  ASSERT_TRUE(StartCoordinatorAndGateways(cfg, &co, &port, &gw)) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartPskDevice(i, "127.0.0.1:" + std::to_string(gw[i % kGateways]));
  int most_sockets = 0;
  int rc = -1;
  for (int waited = 0; waited < 120000 && rc == -1; waited += 50) {
    most_sockets = std::max(most_sockets, Sockets(co));
    rc = Wait(co, 50);
  }
  const std::string log = ReadFile(dir_ / "coordinator.log");
  ASSERT_EQ(rc, 0) << log;
  EXPECT_EQ(Count(log, "gateway gateway=gw0"), static_cast<size_t>(kGateways));
  EXPECT_EQ(Count(log, "registered device="), 0u) << "a device connected to the coordinator itself";
  EXPECT_EQ(Count(log, " via=gw0"), static_cast<size_t>(kAgents));
  EXPECT_LE(most_sockets, 1 + kGateways) << "the coordinator's listening socket and one link per gateway";
  ExpectSimulatorsMetrics(cfg, kRounds + 1);
  size_t handed_up = 0;
  for (int g = 0; g < kGateways; ++g) {
    const std::string gl = ReadFile(dir_ / ("gw0" + std::to_string(g) + ".log"));
    handed_up += Count(gl, c.compression.find("secure") != std::string::npos ? " masked_sum round=" : " partial round=");
  }
  EXPECT_GT(handed_up, static_cast<size_t>(kRounds)) << "the gateways aggregated";
}

INSTANTIATE_TEST_SUITE_P(Families, GatewayFamilies, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST_F(GatewayFleetTest, AKilledGatewaysDevicesComeBackThroughTheirFallback) {
  const auto cfg = WriteExperiment(std::string(kOpt) + "[run]\nrounds = 40\nruns = 1\nseed = 3\n[network]\n"
                                   "deadline_ms = 1500\nquorum = 0.5\nstart_timeout_ms = 60000\n");
  pid_t co = 0;
  int port = 0;
  std::vector<int> gw;
  ASSERT_TRUE(StartCoordinatorAndGateways(cfg, &co, &port, &gw)) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)  // a gateway first, the coordinator as the fallback
    StartPskDevice(i, "127.0.0.1:" + std::to_string(gw[i % kGateways]) + ",127.0.0.1:" + std::to_string(port),
                   {"--delay-ms", "40"});
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", " round=5 agents=12/12", 60000)) << ReadFile(dir_ / "coordinator.log");
  Kill(gateways_[0]);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "disconnected gateway=gw00"), 1u) << log;
  // Every round of the run closed (the one in flight with the devices that came back in time, or by its
  // deadline and quorum), none failed.
  for (int t = 1; t <= 40; ++t)
    EXPECT_EQ(Count(log, fmt::format("round alg=fedavg run=0 round={} agents=", t)), 1u) << "round " << t;
  EXPECT_EQ(Count(log, "closed_by=failed"), 0u);
  for (int i = 0; i < kAgents; i += kGateways)  // gw00's devices, now at the coordinator
    EXPECT_GE(Count(log, "registered device=" + Id(i)), 1u) << Id(i);
  EXPECT_NE(log.find("round=40 agents=12/12 closed_by=all"), std::string::npos) << "the last round includes everyone";
}

}  // namespace gateway_fleet
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {
namespace gateway_fleet {

// `fedrt-keys revoke` at the coordinator reaches the gateway: the revoked
// device is dropped there, refused by the gateway and by the coordinator (its
// fallback) from then on, and the later rounds close without it.
TEST_F(GatewayFleetTest, ARevokedDeviceIsDroppedAndRefusedByItsGateway) {
  const auto cfg = WriteExperiment(std::string(kOpt) + "[run]\nrounds = 60\nruns = 1\nseed = 3\n[network]\n"
                                   "deadline_ms = 3000\nquorum = 0.5\nstart_timeout_ms = 60000\n");
  pid_t co = 0;
  int port = 0;
  std::vector<int> gw;
  ASSERT_TRUE(StartCoordinatorAndGateways(cfg, &co, &port, &gw)) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartPskDevice(i, "127.0.0.1:" + std::to_string(gw[i % kGateways]) + ",127.0.0.1:" + std::to_string(port),
                   {"--delay-ms", "30"});
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", " round=3 agents=12/12", 60000)) << ReadFile(dir_ / "coordinator.log");
  const pid_t k = Spawn({Bin("fedrt-keys"), "revoke", "--keys", (dir_ / "keys").string(), Id(4), "--reason", "stolen"},
                        dir_ / "revoke.log");
  ASSERT_EQ(Wait(k, 10000), 0) << ReadFile(dir_ / "revoke.log");
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("dropped device=dev0004 index=4 via=gw01 reason=revoked"), std::string::npos) << log;
  EXPECT_NE(ReadFile(dir_ / "gw01.log").find("revoked device=dev0004 index=4 reason=device 'dev0004' is revoked: stolen"),
            std::string::npos)
      << ReadFile(dir_ / "gw01.log");
  EXPECT_NE(ReadFile(dir_ / (Id(4) + ".log")).find("is revoked: stolen"), std::string::npos);
  EXPECT_NE(log.find("round=60 agents=11/11 closed_by=all"), std::string::npos) << "the last round runs without it";
  EXPECT_EQ(Count(log, "ready device=dev0004"), 1u) << "it never came back";
}

}  // namespace gateway_fleet
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {
namespace gateway_fleet {

// The coordinator killed (SIGKILL) mid-run and started again on its state
// db: the gateways reconnect with their devices, the round it had not
// committed runs again, and the run's metrics.csv is the simulator's.
TEST_F(GatewayFleetTest, ACoordinatorRestartResumesThroughTheGateways) {
  const auto cfg = WriteExperiment(std::string(kOpt) + "[participation]\nrate = 0.7\n[run]\nrounds = 30\nruns = 1\n"
                                   "seed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\nstart_timeout_ms = 60000\n");
  pid_t co = 0;
  int port = 0;
  std::vector<int> gw;
  ASSERT_TRUE(StartCoordinatorAndGateways(cfg, &co, &port, &gw)) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartPskDevice(i, "127.0.0.1:" + std::to_string(gw[i % kGateways]), {"--delay-ms", "20"});
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "round alg=scaffold run=0 round=5 ", 60000))
      << ReadFile(dir_ / "coordinator.log");
  Kill(co);
  co = StartCoordinator(cfg, port, {}, "coordinator2.log");
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator2.log");
  const std::string log = ReadFile(dir_ / "coordinator2.log");
  EXPECT_NE(log.find("resume state="), std::string::npos) << log;
  EXPECT_EQ(Count(log, "gateway gateway=gw0"), static_cast<size_t>(kGateways)) << "every gateway came back";
  ExpectSimulatorsMetrics(cfg);
}

}  // namespace gateway_fleet
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {
namespace gateway_fleet {

// `fedrt-keys rotate` at the coordinator reaches the gateway: it takes the
// new PSK, drops the device's session, the device comes back with its new
// key and takes part again, and the old key is refused by the gateway.
TEST_F(GatewayFleetTest, ARotatedKeyReachesTheGateway) {
  const auto cfg = WriteExperiment(std::string(kOpt) + "[run]\nrounds = 60\nruns = 1\nseed = 3\n[network]\n"
                                   "deadline_ms = 3000\nquorum = 0.5\nstart_timeout_ms = 60000\n");
  ProvisionWithGateways();
  const fs::path old_key = dir_ / "dev0005.old.psk";
  fs::copy_file(dir_ / "keys" / "devices" / Id(5) / "device.psk", old_key);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  const std::vector<int> gw = StartGateways(port);
  for (int i = 0; i < kAgents; ++i)
    StartPskDevice(i, "127.0.0.1:" + std::to_string(gw[i % kGateways]), {"--delay-ms", "30"});
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", " round=3 agents=12/12", 60000)) << ReadFile(dir_ / "coordinator.log");
  const pid_t k = Spawn({Bin("fedrt-keys"), "rotate", "--keys", (dir_ / "keys").string(), Id(5)}, dir_ / "rotate.log");
  ASSERT_EQ(Wait(k, 10000), 0) << ReadFile(dir_ / "rotate.log");
  ASSERT_TRUE(WaitForLog(dir_ / "gw02.log", "rotated device=dev0005 index=5", 10000)) << ReadFile(dir_ / "gw02.log");
  // The old key, tried at the gateway by an impostor, is refused.
  const pid_t old = Spawn({Bin("fedrt-device"), "--coordinator", "127.0.0.1:" + std::to_string(gw[2]), "--id", Id(5),
                           "--key", old_key.string(), "--give-up-ms", "1500"},
                          dir_ / "impostor.log");
  EXPECT_NE(Wait(old, 20000), 0) << ReadFile(dir_ / "impostor.log");
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("rotated device=dev0005 index=5"), std::string::npos) << log;
  EXPECT_GE(Count(log, "ready device=dev0005 index=5 via=gw02"), 2u) << "it came back with its new key";
  EXPECT_NE(log.find("round=60 agents=12/12 closed_by=all"), std::string::npos) << "the last round includes it";
}

}  // namespace gateway_fleet
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {
namespace gateway_fleet {

// Device reports travel up per device: devices.csv (each member's examples,
// losses and frame bytes per round) through three gateways is the flat
// fleet's, plain and with SecAgg+: the same rows, examples and losses, and
// each member's bytes within 32 of the flat count (the same protocol
// messages; a control frame's timing, and a secure round's announcement,
// which the gateway sends without a deadline, differ by a few bytes), never
// zero. The wall-clock duration is not compared.
TEST_F(GatewayFleetTest, DevicesCsvMatchesTheFlatFleets) {
  for (const char* compression : {"", kSecure}) {
    const auto cfg = WriteExperiment(std::string(kOpt) + "[participation]\nrate = 0.7\n[run]\nrounds = 4\nruns = 1\n"
                                     "seed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\n"
                                     "start_timeout_ms = 60000\n" + compression);
    std::vector<std::vector<std::string>> csv;
    for (bool gateways : {false, true}) {
      fs::remove_all(dir_ / "keys");
      fs::remove_all(dir_ / "out");
      fs::remove(dir_ / "coordinator.db");
      fs::remove(dir_ / "coordinator.db.rounds");
      for (int i = 0; i < kAgents; ++i) fs::remove_all(dir_ / Id(i));
      ProvisionWithGateways();
      const pid_t co = StartCoordinator(cfg, 0, {});
      const int port = WaitPort();
      ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
      std::vector<int> gw;
      if (gateways) gw = StartGateways(port);
      for (int i = 0; i < kAgents; ++i)
        StartPskDevice(i, "127.0.0.1:" + std::to_string(gateways ? gw[i % kGateways] : port));
      ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
      for (pid_t g : gateways_) Kill(g);
      gateways_.clear();
      csv.push_back(ReadLines(dir_ / "out" / "devices.csv"));
    }
    ASSERT_GT(csv[0].size(), 1u);
    ASSERT_EQ(csv[0].size(), csv[1].size());
    for (size_t i = 1; i < csv[0].size(); ++i) {
      // algorithm,run,round,device,examples,loss_before,loss_after,duration_ms,bytes_down,bytes_up
      const std::vector<std::string> a = Cells(csv[0][i]), b = Cells(csv[1][i]);
      ASSERT_EQ(a.size(), 10u) << csv[0][i];
      ASSERT_EQ(b.size(), 10u) << csv[1][i];
      for (int k : {0, 1, 2, 3, 4, 5, 6}) EXPECT_EQ(a[k], b[k]) << "devices.csv line " << i + 1;
      for (int k : {8, 9}) {
        const long flat = std::stol(a[k]), via = std::stol(b[k]);
        EXPECT_GT(via, 0) << "devices.csv line " << i + 1;
        EXPECT_LE(std::labs(flat - via), 32) << "devices.csv line " << i + 1 << ": " << csv[0][i] << " / " << csv[1][i];
      }
    }
  }
}

}  // namespace gateway_fleet
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {
namespace gateway_fleet {

// Devices authenticate to a gateway as to the coordinator: odd devices with
// their certificate (the gateway's server certificate is signed by the
// fleet's CA with the coordinator's name), even ones with their PSK; the run
// is the simulator's.
TEST_F(GatewayFleetTest, CertificateAndPskDevicesBehindGateways) {
  const auto cfg = WriteExperiment(std::string(kOpt) + "[participation]\nrate = 0.7\n[run]\nrounds = 4\nruns = 1\n"
                                   "seed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\nstart_timeout_ms = 60000\n");
  pid_t co = 0;
  int port = 0;
  std::vector<int> gw;
  ASSERT_TRUE(StartCoordinatorAndGateways(cfg, &co, &port, &gw)) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) {
    const fs::path kd = dir_ / "keys" / "devices" / Id(i);
    std::vector<std::string> args = {Bin("fedrt-device"), "--coordinator", "127.0.0.1:" + std::to_string(gw[i % kGateways]),
                                     "--id", Id(i), "--state", (dir_ / Id(i)).string()};
    if (i % 2 == 0) {
      args.insert(args.end(), {"--key", (kd / "device.psk").string()});
    } else {
      args.insert(args.end(), {"--cert", (kd / "device.crt").string(), "--key", (kd / "device.key").string(), "--ca",
                               (kd / "ca.crt").string()});
    }
    Spawn(args, dir_ / (Id(i) + ".log"));
  }
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(ReadFile(dir_ / "coordinator.log"), " via=gw0"), static_cast<size_t>(kAgents));
  ExpectSimulatorsMetrics(cfg);
}

}  // namespace gateway_fleet
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {
namespace gateway_fleet {

// A gateway restarted on its port: its devices (which know no other
// address) come back to it, it gets the open round's basis from the
// coordinator, and the later rounds include them.
TEST_F(GatewayFleetTest, ARestartedGatewayResumes) {
  const auto cfg = WriteExperiment(std::string(kOpt) + "[run]\nrounds = 60\nruns = 1\nseed = 3\n[network]\n"
                                   "deadline_ms = 2000\nquorum = 0.5\nstart_timeout_ms = 60000\n");
  pid_t co = 0;
  int port = 0;
  std::vector<int> gw;
  ASSERT_TRUE(StartCoordinatorAndGateways(cfg, &co, &port, &gw)) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartPskDevice(i, "127.0.0.1:" + std::to_string(gw[i % kGateways]), {"--delay-ms", "30"});
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", " round=5 agents=12/12", 60000)) << ReadFile(dir_ / "coordinator.log");
  Kill(gateways_[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Spawn({Bin("fedrt-gateway"), "--coordinator", "127.0.0.1:" + std::to_string(port), "--id", "gw01", "--keys",
         (dir_ / "keys" / "gateways" / "gw01").string(), "--port", std::to_string(gw[1])},
        dir_ / "gw01-restarted.log");
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "gateway gateway=gw01 "), 2u) << "it came back";
  EXPECT_GE(Count(ReadFile(dir_ / "gw01-restarted.log"), "ready device="), 4u);
  for (int t = 1; t <= 60; ++t)
    EXPECT_EQ(Count(log, fmt::format("round alg=fedavg run=0 round={} agents=", t)), 1u) << "round " << t;
  EXPECT_EQ(Count(log, "closed_by=failed"), 0u);
  EXPECT_NE(log.find("round=60 agents=12/12 closed_by=all"), std::string::npos) << "the last round includes everyone";
}

}  // namespace gateway_fleet
}  // namespace fedrt::net::testing
