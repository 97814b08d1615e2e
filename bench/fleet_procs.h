#pragma once
// Processes of a loopback fleet for the benchmarks (not a test harness): start
// fedrt-keys, fedrt-coordinator and N fedrt-device processes from the build's
// bin directory, wait for them with their peak memory, and read the
// coordinator's log lines (docs/fleet.md, "Log lines").

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace fedrt::bench {

namespace fs = std::filesystem;

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `args` with stdout and stderr in `log`.
inline pid_t Spawn(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Exit code (-1: killed after timeout_s, -2: a signal); `max_rss_kb` gets
// the process's peak resident set.
inline int WaitExit(pid_t pid, int timeout_s, long* max_rss_kb = nullptr) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    int st = 0;
    struct rusage ru {};
    if (wait4(pid, &st, WNOHANG, &ru) == pid) {
      if (max_rss_kb) *max_rss_kb = ru.ru_maxrss;
      return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
    }
    if (std::chrono::steady_clock::now() >= end) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// The number after ` key=` on `line`, or -1; the word after it, or "".
inline double Field(const std::string& line, const std::string& key) {
  const auto p = line.find(" " + key + "=");
  return p == std::string::npos ? -1.0 : std::atof(line.c_str() + p + key.size() + 2);
}
inline std::string Word(const std::string& line, const std::string& key) {
  const auto p = line.find(" " + key + "=");
  if (p == std::string::npos) return "";
  const auto b = p + key.size() + 2;
  return line.substr(b, line.find(' ', b) - b);
}

inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

struct FleetRun {
  std::string log;         // the coordinator's log ("" when the run failed)
  long coordinator_rss_kb = 0;
};

// Provisions `devices` keys in `work`, writes `experiment` there and runs the
// coordinator with `devices` device processes to the end; `tag` names the
// tool in errors.
inline FleetRun RunFleet(const std::string& bin, const fs::path& work, const std::string& experiment, int devices,
                         bool device_state, const char* tag, int timeout_s = 600) {
  FleetRun out;
  fs::remove_all(work);
  fs::create_directories(work);
  std::ofstream(work / "experiment.toml") << experiment;
  if (WaitExit(Spawn({bin + "/fedrt-keys", "--out", (work / "keys").string(), "--devices", std::to_string(devices)},
                     work / "keys.log"),
               120) != 0) {
    std::fprintf(stderr, "%s: provisioning failed:\n%s\n", tag, Slurp(work / "keys.log").c_str());
    return out;
  }
  const pid_t co = Spawn({bin + "/fedrt-coordinator", "--config", (work / "experiment.toml").string(), "--keys",
                          (work / "keys").string(), "--state", (work / "state.db").string(), "--listen", "127.0.0.1",
                          "--port", "0", "--port-file", (work / "port").string(), "--out", (work / "out").string(),
                          "--no-plot"},
                         work / "coordinator.log");
  int port = 0;  // the coordinator listens once its evaluation is prepared (dense theory: seconds at d = 1024)
  for (int i = 0; i < 50 * timeout_s && port == 0; ++i) {
    const std::string s = Slurp(work / "port");
    if (!s.empty() && s.back() == '\n') port = std::stoi(s);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (port == 0) {
    WaitExit(co, 0);
    std::fprintf(stderr, "%s: the coordinator did not start:\n%s\n", tag, Slurp(work / "coordinator.log").c_str());
    return out;
  }
  std::vector<pid_t> devs;
  for (int i = 0; i < devices; ++i) {
    const std::string id = fmt::format("dev{:04d}", i);
    const fs::path kd = work / "keys" / "devices" / id;
    std::vector<std::string> args = {bin + "/fedrt-device", "--coordinator", fmt::format("127.0.0.1:{}", port),
                                     "--id", id, "--key", (kd / "device.psk").string()};
    if (device_state) args.insert(args.end(), {"--state", (work / id).string()});
    devs.push_back(Spawn(args, work / (id + ".log")));
  }
  const int rc = WaitExit(co, timeout_s, &out.coordinator_rss_kb);
  for (pid_t p : devs) WaitExit(p, 10);
  const std::string log = Slurp(work / "coordinator.log");
  if (rc != 0) {
    std::fprintf(stderr, "%s: the coordinator exited with %d:\n%s\n", tag, rc, log.c_str());
    return out;
  }
  out.log = log;
  return out;
}

}  // namespace fedrt::bench
