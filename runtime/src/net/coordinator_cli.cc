#include "fedrt/net/coordinator_cli.h"

#include "fedrt/log/log.h"

namespace fedrt::net {

void AddCoordinatorFlags(CLI::App& app, CoordinatorFlags& f) {
  app.add_option("--config", f.config, "TOML experiment file (same file as fedrt-sim, plus [network])")->required();
  app.add_option("--out", f.out, "output directory (metrics.csv, summary.json, error.png)");
  app.add_option("--state", f.state, "SQLite state file (network.state); a restart resumes from it");
  app.add_option("--keys", f.keys, "provisioning directory of ./fedrt keys (network.keys)");
  app.add_option("--listen", f.listen, "listen address (network.listen)");
  app.add_option("--port", f.port, "TCP port, 0 = any free port (network.port)");
  app.add_option("--port-file", f.port_file, "write the bound port to this file once listening");
  app.add_option("--auth", f.auth, "any | psk | cert (network.auth)");
  app.add_option("--deadline-ms", f.deadline_ms, "round deadline in ms (network.deadline_ms)");
  app.add_option("--quorum", f.quorum, "fraction of sampled devices needed at the deadline (network.quorum)");
  app.add_option("--start-timeout-ms", f.start_timeout_ms, "wait at most this long for all devices before round 0");
  app.add_option("--agents", f.agents, "number of agents N (overrides problem.agents)");
  app.add_option("--rounds", f.rounds, "communication rounds T");
  app.add_option("--local-steps", f.local_steps, "local steps H per round");
  app.add_option("--participation", f.participation, "probability q that an agent takes part in a round");
  app.add_option("--algorithm", f.algorithm, "comma-separated algorithms of the experiment's family");
  app.add_flag("--no-plot", f.no_plot, "do not draw error.png");
  log::AddLevelFlag(app, f.log_level);
}

Status CoordinatorOptionsFromFlags(const CLI::App& app, const CoordinatorFlags& f, CoordinatorOptions& opt) {
  FEDRT_TRY(log::SetLevel(f.log_level));
  FEDRT_TRY(sim::LoadExperimentToml(f.config, opt.experiment));
  FEDRT_TRY(LoadNetworkToml(f.config, opt.network));
  auto given = [&](const char* n) { return app.count(n) > 0; };
  if (given("--state")) opt.network.state = f.state;
  if (given("--keys")) opt.network.keys = f.keys;
  if (given("--listen")) opt.network.listen = f.listen;
  if (given("--port")) opt.network.port = f.port;
  if (given("--auth")) opt.network.auth = f.auth;
  if (given("--deadline-ms")) opt.network.deadline_ms = f.deadline_ms;
  if (given("--quorum")) opt.network.quorum = f.quorum;
  if (given("--start-timeout-ms")) opt.network.start_timeout_ms = f.start_timeout_ms;
  if (given("--agents")) {
    opt.experiment.garnet.agents = f.agents;
    opt.experiment.agents_set = true;
  }
  if (given("--rounds")) opt.experiment.rounds = f.rounds;
  if (given("--local-steps")) opt.experiment.local_steps = f.local_steps;
  if (given("--participation")) opt.experiment.participation = f.participation;
  if (given("--algorithm")) {
    auto a = sim::ParseAlgorithms(f.algorithm);
    if (!a.ok()) return Status(StatusCode::kInvalidArgument, std::string("--algorithm: ") + a.status().message());
    opt.experiment.algorithms = *a;
  }
  FEDRT_TRY(ValidateNetwork(opt.network));
  opt.out = f.out;
  opt.port_file = f.port_file;
  opt.plot = !f.no_plot;
  return Status::Ok();
}

}  // namespace fedrt::net
