#pragma once
// The command line of the coordinator (fedrt-coordinator and the tests'
// coordinator program share it): the experiment's flag table
// (config/experiment_flags.h, the same as fedrt-sim's) plus the [network]
// overrides. Host code.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fedrt/config/experiment_flags.h"
#include "fedrt/core/status.h"
#include "fedrt/coordinator/coordinator.h"

namespace fedrt::net {

struct CoordinatorFlags {
  config::ExperimentFlags experiment;
  std::string state, keys, listen, port_file, auth, http;
  std::string log_level = "info";
  std::vector<std::string> serial;
  long port = 0, deadline_ms = 0, start_timeout_ms = 0, http_linger_s = 0;
  double quorum = 0;
  bool accept_rollback = false;
  bool virtual_clock = false;
};

// Registers the coordinator's flags on `app` (--config is required).
void AddCoordinatorFlags(CLI::App& app, CoordinatorFlags& flags);
// Loads the experiment file, applies the flags given on `app` over it and
// checks the result; the message names the file key or the flag.
Status CoordinatorOptionsFromFlags(const CLI::App& app, const CoordinatorFlags& flags, CoordinatorOptions& out);

}  // namespace fedrt::net
