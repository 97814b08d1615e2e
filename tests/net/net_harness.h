#pragma once
// Process and log helpers for the loopback integration tests: every child
// is killed in TearDown, every wait is bounded.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/device/driver.h"
#include "fedrt/device/state.h"
#include "fedrt/coordinator/state_store.h"
#include "fedrt/problems/instance.h"
#include "fedrt/protocol/client_session.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/config/experiment.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::net::testing {

namespace fs = std::filesystem;

// Tolerance of the fleet-vs-simulator comparison. Devices compute their local
// iterates bit-identically (same cores, oracle construction and RNG keys); the
// coordinator sums the updates in arrival order while the simulator sums in
// agent order, so theta_{t+1} may differ by a few ulps of round-off per round
// (~1e-16 relative); 1e-12 leaves three orders of magnitude for the 20 rounds
// of contraction in which such differences can accumulate.
constexpr double kRelTol = 1e-12;

// The smallest loopback experiment (2 devices, 1 round of SCAFFLSA on Garnet)
// with `network_lines` appended to its [network] table.
inline std::string TinyExperiment(const std::string& network_lines = "") {
  return R"([problem]
kind = "garnet"
heterogeneity = "high"
agents = 2
[algorithm]
names = ["scafflsa"]
local_steps = 10
[run]
rounds = 1
seed = 3
[network]
deadline_ms = 20000
start_timeout_ms = 600000
)" + network_lines;
}

inline std::string Bin(const std::string& name) { return std::string(FEDRT_BIN_DIR) + "/" + name; }
// The tests' own programs (fedrt-test-device, fedrt-test-coordinator).
inline std::string TestBin(const std::string& name) { return std::string(FEDRT_TEST_BIN_DIR) + "/" + name; }

inline std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One CSV line's cells (metrics.csv, devices.csv: no quoting).
inline std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream cells(line);
  for (std::string c; std::getline(cells, c, ',');) out.push_back(c);
  return out;
}

// The lines of a text file (metrics.csv), without their newlines.
inline std::vector<std::string> ReadLines(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

inline size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

// A field of /proc/PID/status in kB (VmRSS, VmHWM: memory bounds are behaviour); -1 if absent.
inline long StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, field.size() + 1, field + ":") == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

// A free loopback port (bound to 0, then released).
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class NetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(FEDRT_NET_TMP) / (std::string(info->test_suite_name()) + "." + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (pid_t p : kids_) {
      ::kill(p, SIGKILL);
      int st;
      ::waitpid(p, &st, 0);
    }
  }

  pid_t Spawn(const std::vector<std::string>& args, const fs::path& log) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    kids_.push_back(pid);
    return pid;
  }

  // Exit code, or -1 on timeout, -2 if killed by a signal.
  int Wait(pid_t pid, int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      int st = 0;
      const pid_t r = ::waitpid(pid, &st, WNOHANG);
      if (r == pid) {
        kids_.erase(std::remove(kids_.begin(), kids_.end(), pid), kids_.end());
        return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  void Kill(pid_t pid) {
    ::kill(pid, SIGKILL);
    Wait(pid, 5000);
  }

  bool WaitForLog(const fs::path& log, const std::string& needle, int timeout_ms, size_t count = 1) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      if (Count(ReadFile(log), needle) >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  void Provision(const fs::path& out, int n) {
    const pid_t p = Spawn({Bin("fedrt-keys"), "--out", out.string(), "--devices", std::to_string(n)},
                          dir_ / "keys.log");
    ASSERT_EQ(Wait(p, 60000), 0) << ReadFile(dir_ / "keys.log");
  }

  fs::path WriteExperiment(const std::string& toml) {
    const fs::path p = dir_ / "experiment.toml";
    std::ofstream(p) << toml;
    return p;
  }

  // The product's coordinator; with test hooks in `extra` (--stop-after-rounds,
  // --secagg-dump) the tests' coordinator program, which has them.
  pid_t StartCoordinator(const fs::path& config, int port, const std::vector<std::string>& extra,
                         const std::string& log_name = "coordinator.log") {
    bool hooks = false;
    for (const auto& a : extra)
      hooks = hooks || a == "--stop-after-rounds" || a == "--secagg-dump" || a == "--secagg-lie";
    std::vector<std::string> args = {hooks ? TestBin("fedrt-test-coordinator") : Bin("fedrt-coordinator"), "--config", config.string(), "--out",
                                     (dir_ / "out").string(), "--keys", (dir_ / "keys").string(), "--state",
                                     (dir_ / "coordinator.db").string(), "--listen", "127.0.0.1", "--port",
                                     std::to_string(port), "--port-file", (dir_ / "port").string(), "--no-plot"};
    args.insert(args.end(), extra.begin(), extra.end());
    fs::remove(dir_ / "port");
    return Spawn(args, dir_ / log_name);
  }

  int WaitPort(int timeout_ms = 30000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      const std::string s = ReadFile(dir_ / "port");
      if (!s.empty() && s.back() == '\n') return std::stoi(s);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  static std::string Id(int i) {
    char b[16];
    std::snprintf(b, sizeof b, "dev%04d", i);
    return b;
  }

  // Device i (even: PSK, odd: certificate), its own log and state directory.
  // The device needs only the address and its credentials: the task comes
  // from the coordinator. Test faults (--delay-ms, --drop-after-masked,
  // --capacity, --wrong-unmask-shares, --unclipped-from, --withhold-masked, --add-to-masked,
  // --update-value) run the tests' device program, which has them.
  pid_t StartDevice(int i, int port, const std::vector<std::string>& extra = {}) {
    const fs::path kd = dir_ / "keys" / "devices" / Id(i);
    const bool faults = !extra.empty() && (extra[0] == "--delay-ms" || extra[0] == "--drop-after-masked" ||
                                           extra[0] == "--capacity" || extra[0] == "--wrong-unmask-shares" ||
                                           extra[0] == "--unclipped-from" || extra[0] == "--withhold-masked" ||
                                           extra[0] == "--add-to-masked" || extra[0] == "--update-value");
    std::vector<std::string> args = {faults ? TestBin("fedrt-test-device") : Bin("fedrt-device"), "--coordinator",
                                     "127.0.0.1:" + std::to_string(port), "--id", Id(i), "--state",
                                     (dir_ / Id(i)).string()};
    if (i % 2 == 0) {
      args.insert(args.end(), {"--key", (kd / "device.psk").string()});
    } else {
      args.insert(args.end(), {"--cert", (kd / "device.crt").string(), "--key", (kd / "device.key").string(),
                               "--ca", (kd / "ca.crt").string()});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return Spawn(args, dir_ / (Id(i) + ".log"));
  }

  // Options of device i (PSK) run in the test's own process with RunDevice,
  // so a test can give it hooks; its state directory as StartDevice's.
  DeviceOptions InProcessDevice(int i, int port) const {
    DeviceOptions opt;
    opt.host = "127.0.0.1";
    opt.port = static_cast<uint16_t>(port);
    opt.id = Id(i);
    opt.credentials.identity = Id(i);
    opt.credentials.psk_file = (dir_ / "keys" / "devices" / Id(i) / "device.psk").string();
    opt.state_dir = (dir_ / Id(i)).string();
    opt.give_up_ms = 30000;
    return opt;
  }

  // The last value of `key=` on lines of `log` containing `needle` ("" if none).
  static std::string LastValue(const std::string& log, const std::string& needle, const std::string& key) {
    std::string v;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line.find(needle) == std::string::npos) continue;
      const auto k = line.find(" " + key + "=");
      if (k == std::string::npos) continue;
      const auto b = k + key.size() + 2;
      v = line.substr(b, line.find(' ', b) - b);
    }
    return v;
  }

  std::vector<RoundRecord> Rounds() {
    auto st = StateStore::Open((dir_ / "coordinator.db").string());
    EXPECT_TRUE(st.ok());
    if (!st.ok()) return {};
    auto r = (*st)->load_rounds();
    return r.ok() ? *r : std::vector<RoundRecord>{};
  }

  // theta_{t+1} of the simulator for every round t of run 0 of algorithm `alg`.
  std::vector<Eigen::VectorXd> SimThetas(const fs::path& config, size_t alg = 0) {
    config::ExperimentConfig cfg;
    EXPECT_TRUE(config::LoadExperimentToml(config.string(), cfg).ok());
    cfg.threads = 2;
    sim::SimOptions opt;
    opt.keep_theta_history = true;
    auto res = sim::RunExperiment(cfg, opt);
    EXPECT_TRUE(res.ok()) << res.status().message();
    if (!res.ok()) return {};
    const auto& h = res->algorithms[alg].theta_history[0];
    return std::vector<Eigen::VectorXd>(h.begin() + 1, h.end());
  }

  // Largest |a - b|_inf / |b|_inf over the rounds of (alg, run 0); counts bit-identical rounds.
  double MaxRelDiff(const std::vector<RoundRecord>& rounds, const std::vector<Eigen::VectorXd>& sim, uint32_t alg,
                    int* identical, int* compared) {
    double worst = 0.0;
    *identical = 0;
    *compared = 0;
    for (const auto& r : rounds) {
      if (r.algorithm != alg || r.run != 0 || r.round >= sim.size()) continue;
      const Eigen::VectorXd& b = sim[r.round];
      bool same = static_cast<int>(r.theta.size()) == b.size();
      double diff = 0.0;
      for (int i = 0; same && i < b.size(); ++i) {
        diff = std::max(diff, std::abs(r.theta[i] - b[i]));
        same = same && r.theta[i] == b[i];
      }
      worst = std::max(worst, diff / b.cwiseAbs().maxCoeff());
      *identical += same ? 1 : 0;
      ++*compared;
    }
    return worst;
  }

  // The compression memory V_c (segment 0) that device `agent` saved in its
  // state directory for algorithm `alg`: its session rebuilt from the
  // experiment file and restored from the saved region.
  std::vector<double> DeviceMemory(const fs::path& config, uint32_t agent, uint32_t alg = 0) {
    config::ExperimentConfig e;
    EXPECT_TRUE(config::LoadExperimentToml(config.string(), e).ok());
    auto task = config::MakeTask(e);
    EXPECT_TRUE(task.ok());
    auto saved = LoadSavedSession((dir_ / Id(static_cast<int>(agent))).string());
    if (!task.ok() || !saved.ok() || !saved->has_value() || (*saved)->algorithm != alg) return {};
    auto inst = problems::Instance::Build(*task, {});
    EXPECT_TRUE(inst.ok());
    if (!inst.ok()) return {};
    using Session = protocol::ClientSession<double>;
    std::vector<uint8_t> mem(Session::WorkspaceBytes(*task, alg) + 64);
    Arena arena(mem.data(), mem.size());
    Session::Options o;
    o.task = &*task;
    o.algorithm = alg;
    o.agent = agent;
    o.problem = (*inst)->local(agent);
    Session session;
    EXPECT_TRUE(session.init(arena, o).ok());
    EXPECT_TRUE(session.restore((*saved)->state.data(), (*saved)->state.size()).ok());
    const auto& coder = session.coder(0);
    if (coder.memory() == nullptr) return {};
    return std::vector<double>(coder.memory(), coder.memory() + session.shape().segment_dim);
  }

  fs::path dir_;
  std::vector<pid_t> kids_;
};

}  // namespace fedrt::net::testing
