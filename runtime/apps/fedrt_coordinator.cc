// fedrt-coordinator: serves a fleet of fedrt-device processes over TLS for
// one experiment file (its [network] table: address, port, keys, state db,
// deadline, quorum). Writes metrics.csv, summary.json and the plots to --out,
// like fedrt-sim, and logs one line per event on stderr (README: "Logs").

#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "fedrt/cli/parse.h"
#include "fedrt/coordinator/cli.h"

using namespace fedrt;

int main(int argc, char** argv) {
  CLI::App app{
      "fedrt-coordinator: runs an experiment file's rounds over a fleet of TLS devices (every family: FedLSA, "
      "SCAFFLSA, FedAvg, Scaffold, FedProx, Fed-RR, FedEM, naive FedEM, VR-FedEM; compression; SecAgg+), with "
      "SQLite state a restart resumes from; writes the simulator's outputs"};
  net::CoordinatorFlags flags;
  net::AddCoordinatorFlags(app, flags);
  if (int rc = 0; !cli::Parse(app, argc, argv, &rc)) return rc;
  // A closed log pipe or peer must give an error, not end the experiment
  // (sockets send with MSG_NOSIGNAL; this covers stderr and everything else).
  std::signal(SIGPIPE, SIG_IGN);
  net::CoordinatorOptions opt;
  bool started = false;
  opt.started = &started;
  Status st = net::CoordinatorOptionsFromFlags(app, flags, opt);
  if (st.ok()) st = net::RunCoordinator(opt);
  if (!st.ok()) {
    std::fprintf(stderr, "fedrt-coordinator: error: %s\n", st.message());
    return started ? cli::kRunFailed : cli::kUsageError;  // docs/cli.md, "Exit codes"
  }
  return 0;
}
