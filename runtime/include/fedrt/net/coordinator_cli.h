#pragma once
// The command line of the coordinator (fedrt-coordinator and the tests'
// coordinator program share it): the experiment file, its [network] table and
// the flags that override them. Host code.

#include <string>

#include <CLI/CLI.hpp>

#include "fedrt/core/status.h"
#include "fedrt/net/coordinator.h"

namespace fedrt::net {

struct CoordinatorFlags {
  std::string config, out = "out/coordinator", state, keys, listen, port_file, auth, algorithm;
  std::string log_level = "info";
  long port = 0, deadline_ms = 0, start_timeout_ms = 0, rounds = 0, local_steps = 0;
  double quorum = 0, participation = 0;
  int agents = 0;
  bool no_plot = false;
};

// Registers the coordinator's flags on `app`.
void AddCoordinatorFlags(CLI::App& app, CoordinatorFlags& flags);
// Loads the experiment file, applies the flags given on `app` over it and
// checks the result; the message names the file key or the flag.
Status CoordinatorOptionsFromFlags(const CLI::App& app, const CoordinatorFlags& flags, CoordinatorOptions& out);

}  // namespace fedrt::net
