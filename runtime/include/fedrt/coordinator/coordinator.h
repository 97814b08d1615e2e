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

class RoundFaults;

struct CoordinatorOptions {
  config::ExperimentConfig experiment;
  NetworkConfig network;
  std::string out;        // --out DIR: metrics.csv, summary.json, the plots
  std::string port_file;  // written with the bound port once listening
  std::string name;       // the experiment's name on the dashboard (its file: folder/stem)
  bool plot = true;
  // --accept-rollback: resume from a state db behind its watermark or its
  // devices (docs/security.md, "State that never goes back"); else the
  // coordinator stops and says so.
  bool accept_rollback = false;
  // --virtual-clock: algorithm.mode = "async" in the order of the
  // simulator's virtual clock ([devices]), equal to fedrt-sim bit for bit
  // (a test mode: one job out at a time; docs/async.md).
  bool virtual_clock = false;
  RoundFaults* faults = nullptr;  // tests only (coordinator/fleet_rounds.h); the command line sets none
  // Set to true once the experiment, its data, the keys and the state db are
  // read and accepted: an error before is in what the coordinator was given
  // (exit code 2), one after is a failed run (1; docs/cli.md, "Exit codes").
  bool* started = nullptr;
};

// Runs the experiment to completion (or until a hook stops it). Returns the
// first fatal error (bad keys, a state db of another experiment, ...).
Status RunCoordinator(const CoordinatorOptions& options);

}  // namespace fedrt::net
