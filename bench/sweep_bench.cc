// fedrt-sweep-bench: a step-size sweep of short simulator runs in one C++
// process, the reference for the Python module's overhead
// (bench/python_overhead.py prints both side by side). Each experiment is
// built, validated and run through sim::RunExperiment as fedrt-sim does, and
// its summary and metrics are formed as the Python module forms them.
//
// usage: fedrt-sweep-bench [--experiments K] [--agents N] [--local-steps H] [--rounds T] [--threads W]
// prints: one line "cpp_sweep experiments=K seconds=S".

#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "fedrt/config/experiment.h"
#include "fedrt/report/outputs.h"
#include "fedrt/sim/simulator.h"

int main(int argc, char** argv) {
  CLI::App app{"fedrt-sweep-bench: K short simulator runs (a step-size sweep) in one process"};
  int experiments = 100, agents = 10, threads = 0;
  long local_steps = 10, rounds = 10;
  app.add_option("--experiments", experiments, "runs in the sweep")->check(CLI::PositiveNumber);
  app.add_option("--agents", agents, "N")->check(CLI::PositiveNumber);
  app.add_option("--local-steps", local_steps, "H")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "T")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "worker threads (0 = all cores)");
  CLI11_PARSE(app, argc, argv);
  const auto t0 = std::chrono::steady_clock::now();
  size_t checksum = 0;
  for (int k = 0; k < experiments; ++k) {
    fedrt::config::ExperimentConfig cfg;
    cfg.garnet.agents = agents;
    cfg.local_steps = local_steps;
    cfg.rounds = rounds;
    cfg.threads = threads;
    cfg.step = 0.001 * (1 + k % 50);
    cfg.plot = false;
    fedrt::config::ApplyFamilyDefaults(cfg);
    if (auto st = fedrt::config::Validate(cfg); !st.ok()) {
      std::fprintf(stderr, "fedrt-sweep-bench: %s\n", st.message());
      return 2;
    }
    auto r = fedrt::sim::RunExperiment(cfg);
    if (!r.ok()) {
      std::fprintf(stderr, "fedrt-sweep-bench: %s\n", r.status().message());
      return 1;
    }
    checksum += fedrt::report::SummaryJson(*r).dump().size() + r->algorithms.size();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("cpp_sweep experiments=%d seconds=%.6f checksum=%zu\n", experiments, s, checksum);
  return 0;
}
