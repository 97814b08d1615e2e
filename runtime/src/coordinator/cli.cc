#include "fedrt/coordinator/cli.h"

#include <filesystem>

#include "fedrt/config/class_count.h"
#include "fedrt/coordinator/log.h"
#include "fedrt/log/log.h"
#include "fedrt/ops/http_endpoint.h"

namespace fedrt::net {

void AddCoordinatorFlags(CLI::App& app, CoordinatorFlags& f) {
  config::AddExperimentFlags(app, f.experiment);
  app.get_option("--config")->required();
  // The simulator's own knobs: accepted (an experiment's flags work for both
  // programs) but not listed, since a coordinator's rounds run on devices.
  for (const char* sim_only : {"--threads", "--kernel"})
    if (CLI::Option* o = app.get_option_no_throw(sim_only)) o->group("");
  app.add_option("--state", f.state, "network.state: SQLite state file; a restart resumes from it");
  app.add_option("--keys", f.keys, "network.keys: provisioning directory of ./fedrt keys");
  app.add_option("--listen", f.listen, "network.listen: listen address");
  app.add_option("--port", f.port, "network.port: TCP port, 0 = any free port");
  app.add_option("--port-file", f.port_file, "write the bound port to this file once listening");
  app.add_option("--serial", f.serial,
                 "network.serial: also serve a microcontroller on this serial line, PATH[,BAUD] (BAUD 115200 "
                 "unless given, ignored by a pseudo-terminal), e.g. /dev/ttyACM0,115200; repeat for more lines "
                 "(docs/microcontrollers.md, \"A board on a serial line\")")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--auth", f.auth, "network.auth: any | psk | cert");
  app.add_option("--deadline-ms", f.deadline_ms, "network.deadline_ms: round deadline in ms");
  app.add_option("--quorum", f.quorum, "network.quorum: fraction of sampled devices needed at the deadline");
  app.add_option("--start-timeout-ms", f.start_timeout_ms,
                 "network.start_timeout_ms: wait at most this long for every device to answer the task");
  app.add_option("--http", f.http,
                 "network.http: serve the dashboard, JSON and /metrics on PORT or ADDRESS:PORT (docs/dashboard.md); "
                 "a non-loopback ADDRESS requires the token in KEYS/http.token");
  app.add_option("--http-linger", f.http_linger_s,
                 "network.http_linger_s: keep serving the finished run's dashboard this many SECONDS (Ctrl-C ends it)");
  app.add_flag("--accept-rollback", f.accept_rollback,
               "resume from a state db that holds fewer rounds than its watermark or its devices show (emptied, "
               "restored from an older backup, its -wal lost): those rounds run again (docs/security.md)");
  app.add_flag("--virtual-clock", f.virtual_clock,
               "algorithm.mode = \"async\": hand out jobs and take updates in the order of the simulator's virtual "
               "clock ([devices]), one job at a time, so the run equals fedrt-sim's bit for bit (a test mode; "
               "docs/async.md)");
  log::AddLevelFlag(app, f.log_level);
}

Status CoordinatorOptionsFromFlags(const CLI::App& app, const CoordinatorFlags& f, CoordinatorOptions& opt) {
  FEDRT_TRY(log::SetLevel(f.log_level));
  FEDRT_TRY(config::ExperimentFromFlags(app, f.experiment, opt.experiment));
  // Softmax without model.classes: counted from the shards when this coordinator reads them.
  auto counted = config::CountClasses(opt.experiment, opt.experiment.data.coordinator_reads_shards,
                                      /*skip_unreadable=*/true);
  if (!counted.ok()) return counted.status();
  if (!counted->empty()) CoordinatorLog("{}", *counted);
  FEDRT_TRY(LoadNetworkToml(f.experiment.config, opt.network));
  auto given = [&](const char* n) { return app.count(n) > 0; };
  if (given("--state")) opt.network.state = f.state;
  if (given("--keys")) opt.network.keys = f.keys;
  if (given("--listen")) opt.network.listen = f.listen;
  if (given("--port")) opt.network.port = f.port;
  if (given("--auth")) opt.network.auth = f.auth;
  if (given("--deadline-ms")) opt.network.deadline_ms = f.deadline_ms;
  if (given("--quorum")) opt.network.quorum = f.quorum;
  if (given("--start-timeout-ms")) opt.network.start_timeout_ms = f.start_timeout_ms;
  if (given("--http")) opt.network.http = f.http;
  if (given("--serial")) opt.network.serial = f.serial;
  if (given("--http-linger")) opt.network.http_linger_s = f.http_linger_s;
  if (!opt.network.http.empty()) {
    std::string host;
    uint16_t port = 0;
    FEDRT_TRY(ParseHttpAddress(opt.network.http, &host, &port));
  }
  opt.name = std::filesystem::path(f.experiment.config).parent_path().filename().string();
  opt.name += (opt.name.empty() ? "" : "/") + std::filesystem::path(f.experiment.config).stem().string();
  FEDRT_TRY(ValidateNetwork(opt.network));
  // The outputs go where the experiment says ([run] out, or --out), as
  // fedrt-sim's; without either, to out/coordinator rather than the simulator's default.
  opt.out = opt.experiment.out == config::ExperimentConfig{}.out ? std::string("out/coordinator") : opt.experiment.out;
  opt.port_file = f.port_file;
  opt.accept_rollback = f.accept_rollback;
  opt.virtual_clock = f.virtual_clock;
  if (opt.virtual_clock && !opt.experiment.async.async())
    return Status::Invalid("--virtual-clock orders the jobs of algorithm.mode = \"async\"; this experiment's rounds "
                           "are synchronous");
  opt.plot = opt.experiment.plot;
  return Status::Ok();
}

}  // namespace fedrt::net
