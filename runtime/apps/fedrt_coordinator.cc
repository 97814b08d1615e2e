// fedrt-coordinator: serves a fleet of fedrt-device processes over TLS for
// one experiment file (its [network] table: address, port, keys, state db,
// deadline, quorum). Writes metrics.csv, summary.json and error.png to --out,
// like fedrt-sim, and logs one line per event on stderr (README: "Logs").

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fedrt/net/coordinator.h"

using namespace fedrt;

namespace {
int Fail(const std::string& what) {
  std::fprintf(stderr, "fedrt-coordinator: error: %s\n", what.c_str());
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-coordinator: federated rounds over TLS with SQLite state"};
  std::string config, out = "out/coordinator", state, keys, listen, port_file, auth, algorithm;
  long port = 0, deadline_ms = 0, start_timeout_ms = 0, rounds = 0, local_steps = 0;
  double quorum = 0, participation = 0;
  bool no_plot = false;
  app.add_option("--config", config, "TOML experiment file (same file as fedrt-sim, plus [network])")->required();
  app.add_option("--out", out, "output directory (metrics.csv, summary.json, error.png)");
  app.add_option("--state", state, "SQLite state file (network.state); a restart resumes from it");
  app.add_option("--keys", keys, "provisioning directory of ./fedrt keys (network.keys)");
  app.add_option("--listen", listen, "listen address (network.listen)");
  app.add_option("--port", port, "TCP port, 0 = any free port (network.port)");
  app.add_option("--port-file", port_file, "write the bound port to this file once listening");
  app.add_option("--auth", auth, "any | psk | cert (network.auth)");
  app.add_option("--deadline-ms", deadline_ms, "round deadline in ms (network.deadline_ms)");
  app.add_option("--quorum", quorum, "fraction of sampled devices needed at the deadline (network.quorum)");
  app.add_option("--start-timeout-ms", start_timeout_ms, "wait at most this long for all devices before round 0");
  int agents = 0;
  app.add_option("--agents", agents, "number of agents N (overrides problem.agents; give the same to every process)");
  app.add_option("--rounds", rounds, "communication rounds T");
  app.add_option("--local-steps", local_steps, "local steps H per round");
  app.add_option("--participation", participation, "probability q that an agent takes part in a round");
  app.add_option("--algorithm", algorithm, "comma-separated algorithms of the experiment's family");
  app.add_flag("--no-plot", no_plot, "do not draw error.png");
  CLI11_PARSE(app, argc, argv);

  net::CoordinatorOptions opt;
  Status st = sim::LoadExperimentToml(config, opt.experiment);
  if (!st.ok()) return Fail(st.message());
  st = net::LoadNetworkToml(config, opt.network);
  if (!st.ok()) return Fail(st.message());
  auto given = [&](const char* n) { return app.count(n) > 0; };
  if (given("--state")) opt.network.state = state;
  if (given("--keys")) opt.network.keys = keys;
  if (given("--listen")) opt.network.listen = listen;
  if (given("--port")) opt.network.port = port;
  if (given("--auth")) opt.network.auth = auth;
  if (given("--deadline-ms")) opt.network.deadline_ms = deadline_ms;
  if (given("--quorum")) opt.network.quorum = quorum;
  if (given("--start-timeout-ms")) opt.network.start_timeout_ms = start_timeout_ms;
  if (given("--agents")) {
    opt.experiment.garnet.agents = agents;
    opt.experiment.agents_set = true;
  }
  if (given("--rounds")) opt.experiment.rounds = rounds;
  if (given("--local-steps")) opt.experiment.local_steps = local_steps;
  if (given("--participation")) opt.experiment.participation = participation;
  if (given("--algorithm")) {
    auto a = sim::ParseAlgorithms(algorithm);
    if (!a.ok()) return Fail(std::string("--algorithm: ") + a.status().message());
    opt.experiment.algorithms = *a;
  }
  st = net::ValidateNetwork(opt.network);
  if (!st.ok()) return Fail(st.message());
  opt.out = out;
  opt.port_file = port_file;
  opt.plot = !no_plot;
  st = net::RunCoordinator(opt);
  if (!st.ok()) return Fail(st.message());
  return 0;
}
