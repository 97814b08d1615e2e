// fedrt-test-coordinator: fedrt-coordinator plus the fault hooks of
// tests/support/fault_hooks.h (a stop between rounds, a SIGKILL in or after a
// commit, a dump of the SecAgg+ messages it receives, a lie about who
// survived a secure round). Built with the tests only; the product's
// fedrt-coordinator has none of these flags and links none of the hooks.

#include <cstdio>

#include <CLI/CLI.hpp>

#include "fault_hooks.h"
#include "fedrt/cli/parse.h"
#include "fedrt/coordinator/cli.h"

using namespace fedrt;

int main(int argc, char** argv) {
  CLI::App app{"fedrt-test-coordinator: fedrt-coordinator with test hooks"};
  net::CoordinatorFlags flags;
  net::AddCoordinatorFlags(app, flags);
  test::FaultSettings hooks;
  app.add_option("--stop-after-rounds", hooks.stop_after_rounds, "exit after closing this many rounds (a crash)");
  app.add_option("--secagg-dump", hooks.secagg_dump, "append every SecAgg+ message received to FILE");
  app.add_option("--crash-in-commit", hooks.crash_in_commit,
                 "SIGKILL itself inside its N-th round commit, before SQLite's COMMIT");
  app.add_option("--crash-after-commit", hooks.crash_after_commit,
                 "SIGKILL itself after its N-th round commit, before the devices hear of it");
  app.add_option("--secagg-lie", hooks.secagg_lie_round,
                 "in secure round ROUND (0-based), tell the first half of the devices that the last one dropped");
  CLI11_PARSE(app, argc, argv);
  net::CoordinatorOptions opt;
  bool started = false;
  opt.started = &started;
  Status st = net::CoordinatorOptionsFromFlags(app, flags, opt);
  test::FaultHooks faults(hooks);
  opt.faults = &faults;
  if (st.ok()) st = net::RunCoordinator(opt);
  if (!st.ok()) {
    std::fprintf(stderr, "fedrt-test-coordinator: error: %s\n", st.message());
    return started ? cli::kRunFailed : cli::kUsageError;  // docs/cli.md, "Exit codes"
  }
  return 0;
}
