// fedrt-net-latency: what one round costs on loopback. Provisions keys,
// starts a real fedrt-coordinator and N real fedrt-device processes over TLS
// on 127.0.0.1 (FedLSA on Garnet, d = 8, H = 1000 by default), once without
// and once with SecAgg+, and prints the median and p99 of every phase of a
// round from the coordinator's log (docs/fleet.md, "Log lines"):
//   plain:  collect (broadcast -> last update), persist (SQLite commit),
//           round (open -> result sent)
//   SecAgg+: advertise, share_keys, masked, unmask (each phase's span), persist, round
// Round 0 of each run is left out (connections warming up).
//
//   fedrt-net-latency [--devices 10] [--rounds 200] [--local-steps 1000] [--no-device-state] [--keep DIR]

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fleet_procs.h"

namespace fs = std::filesystem;
using namespace fedrt::bench;

namespace {

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

struct Options {
  int devices = 10, rounds = 200, local_steps = 1000;
  bool no_device_state = false;
  std::string keep;
};

// One fleet run; returns the coordinator's log ("" on failure).
std::string RunLatencyFleet(const std::string& bin, const fs::path& work, const Options& o, bool secure) {
  std::string cfg = fmt::format(
      "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = {}\ndim = 8\n"
      "[algorithm]\nnames = [\"fedlsa\"]\nstep = 0.01\nlocal_steps = {}\n[run]\nrounds = {}\nseed = 1\n"
      "[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n",
      o.devices, o.local_steps, o.rounds);
  if (secure) cfg += "[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\nsecure_aggregation = true\n";
  return RunFleet(bin, work, cfg, o.devices, !o.no_device_state, "fedrt-net-latency").log;
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
  std::printf("round latency on loopback: FedLSA, Garnet d=8, H=%d, N=%d fedrt-device processes (PSK, TLS 1.3), "
              "%d rounds per run (round 1 left out)\n",
              o.local_steps, o.devices, o.rounds);
  std::printf("%-8s %-11s %9s %9s %9s %7s\n", "run", "phase", "median ms", "p99 ms", "max ms", "rounds");
  int failed = 0;
  for (bool secure : {false, true}) {
    std::fprintf(stderr, "[net-latency] %s run: coordinator + %d devices ...\n", secure ? "SecAgg+" : "plain", o.devices);
    const std::string log = RunLatencyFleet(bin, work / (secure ? "secagg" : "plain"), o, secure);
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
