#pragma once
// fedrt-coordinator: the network driver of the server sessions
// (docs/architecture.md, "Layers"). One single-threaded Asio event loop
// serves every device over non-blocking mbedTLS sessions: it registers
// devices (Hello), sends each the task (Welcome), waits for their TaskReply,
// and hands the rounds to FleetRounds (coordinator/fleet_rounds.h), which runs the
// protocol's server sessions with SQLite write-ahead persistence. At the end
// it writes the simulator's outputs from the round log. Host code.

#include <cstdint>
#include <string>

#include "fedrt/core/status.h"
#include "fedrt/coordinator/network_config.h"
#include "fedrt/config/experiment.h"

namespace fedrt::net {

// Test hooks; the fedrt-coordinator command line exposes none.
struct CoordinatorHooks {
  long stop_after_rounds = 0;  // exit after closing this many rounds (0 = never): a crash between rounds
  std::string secagg_dump;     // append every SecAgg+ message received: "alg run round u body_case hex(Envelope)"
  long crash_in_commit = 0;     // SIGKILL itself in its N-th round commit, before SQLite's COMMIT (0 = never)
  long crash_after_commit = 0;  // SIGKILL itself after its N-th round commit, before devices hear of it
  long secagg_lie_round = -1;   // in this secure round (0-based), tell the first half of the devices that the last dropped
};

struct CoordinatorOptions {
  config::ExperimentConfig experiment;
  NetworkConfig network;
  std::string out;        // --out DIR: metrics.csv, summary.json, error.png
  std::string port_file;  // written with the bound port once listening
  std::string name;       // the experiment's name on the dashboard (its file: folder/stem)
  bool plot = true;
  CoordinatorHooks hooks;
};

// Runs the experiment to completion (or until a hook stops it). Returns the
// first fatal error (bad keys, a state db of another experiment, ...).
Status RunCoordinator(const CoordinatorOptions& options);

}  // namespace fedrt::net
