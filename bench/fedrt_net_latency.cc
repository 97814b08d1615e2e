// fedrt-net-latency: what one round costs on loopback. Provisions keys,
// starts a real fedrt-coordinator and N real fedrt-device processes over TLS
// on 127.0.0.1 (FedLSA on Garnet, d = 8, H = 1000 by default), once without
// and once with SecAgg+, and prints the median and p99 of every phase of a
// round from the coordinator's log (docs/architecture.md, "Logs"):
//   plain:  collect (broadcast -> last update), persist (SQLite commit),
//           round (open -> result sent)
//   SecAgg+: advertise, share_keys, masked, unmask (each phase's span), persist, round
// Round 0 of each run is left out (connections warming up).
//
//   fedrt-net-latency [--devices 10] [--rounds 200] [--local-steps 1000] [--no-device-state] [--keep DIR]

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace fs = std::filesystem;

namespace {

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t Spawn(const std::vector<std::string>& args, const fs::path& log) {
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

int WaitExit(pid_t pid, int timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// The number after ` key=` on `line`, or -1.
double Field(const std::string& line, const std::string& key) {
  const auto p = line.find(" " + key + "=");
  return p == std::string::npos ? -1.0 : std::atof(line.c_str() + p + key.size() + 2);
}

std::string Word(const std::string& line, const std::string& key) {
  const auto p = line.find(" " + key + "=");
  if (p == std::string::npos) return "";
  const auto b = p + key.size() + 2;
  return line.substr(b, line.find(' ', b) - b);
}

// Phase name -> samples (ms) over rounds 2.. of the log.
std::map<std::string, std::vector<double>> Phases(const std::string& log) {
  std::map<std::string, std::vector<double>> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const std::string round = Word(line, "round");
    if (round.empty() || round == "1" || round == "init") continue;
    if (line.find(" coordinator round alg=") != std::string::npos) {
      out["collect"].push_back(Field(line, "collect_ms"));
      out["persist"].push_back(Field(line, "persist_ms"));
      out["round"].push_back(Field(line, "latency_ms"));
    } else if (line.find(" secagg_phase ") != std::string::npos) {
      out[Word(line, "phase")].push_back(Field(line, "ms"));
    }
  }
  return out;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

struct Options {
  int devices = 10, rounds = 200, local_steps = 1000;
  bool no_device_state = false;
  std::string keep;
};

// One fleet run; returns the coordinator's log ("" on failure).
std::string RunFleet(const std::string& bin, const fs::path& work, const Options& o, bool secure) {
  fs::remove_all(work);
  fs::create_directories(work);
  std::string cfg = fmt::format(
      "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = {}\ndim = 8\n"
      "[algorithm]\nnames = [\"fedlsa\"]\nstep = 0.01\nlocal_steps = {}\n[run]\nrounds = {}\nseed = 1\n"
      "[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n",
      o.devices, o.local_steps, o.rounds);
  if (secure) cfg += "[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\nsecure_aggregation = true\n";
  std::ofstream(work / "experiment.toml") << cfg;
  if (WaitExit(Spawn({bin + "/fedrt-keys", "--out", (work / "keys").string(), "--devices", std::to_string(o.devices)},
                     work / "keys.log"),
               120) != 0) {
    std::fprintf(stderr, "fedrt-net-latency: provisioning failed:\n%s\n", Slurp(work / "keys.log").c_str());
    return "";
  }
  const pid_t co = Spawn({bin + "/fedrt-coordinator", "--config", (work / "experiment.toml").string(), "--keys",
                          (work / "keys").string(), "--state", (work / "state.db").string(), "--listen", "127.0.0.1",
                          "--port", "0", "--port-file", (work / "port").string(), "--out", (work / "out").string(),
                          "--no-plot"},
                         work / "coordinator.log");
  int port = 0;
  for (int i = 0; i < 600 && port == 0; ++i) {
    const std::string s = Slurp(work / "port");
    if (!s.empty() && s.back() == '\n') port = std::stoi(s);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (port == 0) {
    WaitExit(co, 0);
    std::fprintf(stderr, "fedrt-net-latency: the coordinator did not start:\n%s\n", Slurp(work / "coordinator.log").c_str());
    return "";
  }
  std::vector<pid_t> devs;
  for (int i = 0; i < o.devices; ++i) {
    const std::string id = fmt::format("dev{:04d}", i);
    const fs::path kd = work / "keys" / "devices" / id;
    std::vector<std::string> args = {bin + "/fedrt-device", "--coordinator", fmt::format("127.0.0.1:{}", port),
                                     "--id", id, "--key", (kd / "device.psk").string()};
    if (!o.no_device_state) args.insert(args.end(), {"--state", (work / id).string()});
    devs.push_back(Spawn(args, work / (id + ".log")));
  }
  const int rc = WaitExit(co, 600);
  for (pid_t p : devs) WaitExit(p, 10);
  const std::string log = Slurp(work / "coordinator.log");
  if (rc != 0) {
    std::fprintf(stderr, "fedrt-net-latency: the coordinator exited with %d:\n%s\n", rc, log.c_str());
    return "";
  }
  return log;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-net-latency: median and p99 of each phase of a FedLSA round over TLS on loopback, "
               "with real coordinator and device processes, without and with SecAgg+"};
  Options o;
  app.add_option("--devices", o.devices, "devices N (processes)")->check(CLI::Range(2, 200));
  app.add_option("--rounds", o.rounds, "rounds T per run")->check(CLI::Range(3, 100000));
  app.add_option("--local-steps", o.local_steps, "local steps H")->check(CLI::Range(1, 10000000));
  app.add_flag("--no-device-state", o.no_device_state,
               "devices keep their state in memory only (no state directory, no fsync per update)");
  app.add_option("--keep", o.keep, "keep the runs' files (logs, state) in this directory");
  CLI11_PARSE(app, argc, argv);
  const std::string bin = fs::canonical("/proc/self/exe").parent_path().string();
  const fs::path work = o.keep.empty() ? fs::temp_directory_path() / fmt::format("fedrt-net-latency-{}", getpid())
                                       : fs::path(o.keep);
  std::printf("round latency on loopback: FedLSA, Garnet d=8, H=%d, N=%d fedrt-device processes (PSK, TLS 1.2), "
              "%d rounds per run (round 1 left out)\n",
              o.local_steps, o.devices, o.rounds);
  std::printf("%-8s %-11s %9s %9s %9s %7s\n", "run", "phase", "median ms", "p99 ms", "max ms", "rounds");
  int failed = 0;
  for (bool secure : {false, true}) {
    std::fprintf(stderr, "[net-latency] %s run: coordinator + %d devices ...\n", secure ? "SecAgg+" : "plain", o.devices);
    const std::string log = RunFleet(bin, work / (secure ? "secagg" : "plain"), o, secure);
    if (log.empty()) {
      ++failed;
      continue;
    }
    const auto phases = Phases(log);
    const std::vector<std::string> order =
        secure ? std::vector<std::string>{"advertise", "shares", "masked", "unmask", "persist", "round"}
               : std::vector<std::string>{"collect", "persist", "round"};
    for (const auto& name : order) {
      auto it = phases.find(name);
      if (it == phases.end()) continue;
      const auto& v = it->second;
      std::printf("%-8s %-11s %9.3f %9.3f %9.3f %7zu\n", secure ? "secagg" : "plain", name.c_str(), Quantile(v, 0.5),
                  Quantile(v, 0.99), Quantile(v, 1.0), v.size());
    }
  }
  std::printf("collect = broadcast sent -> last update in (local work + 2 one-way trips); persist = the round's\n"
              "SQLite commit before anyone learns the result; round = open -> result sent. SecAgg+ phases are each\n"
              "phase's span at the coordinator (compute_aggregate runs inside unmask).\n");
  if (o.keep.empty()) fs::remove_all(work);
  return failed == 0 ? 0 : 1;
}
