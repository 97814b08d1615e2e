#pragma once
// The command-line flags that override an experiment file's keys: one table
// for every host binary that runs an experiment (fedrt-sim, fedrt-coordinator),
// so a flag means the same in the simulator and on the fleet. Host code.

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "fedrt/config/experiment.h"
#include "fedrt/core/status.h"

namespace fedrt::config {

struct ExperimentFlags {
  std::string config, problem, problem_file, heterogeneity, algorithm, out, data, quantizer, kernel;
  int agents = 0, threads = 0;
  double step = 0, comm_prob = 0, participation = 0, prox_mu = 0, covariate_shift = 0, concept_shift = 0,
         quantity_skew = 0, l2 = 0, noise = 0, clip = 0, em_step = 0;
  long local_steps = 0, rounds = 0, runs = 0, batch = 0, samples = 0, inner_iters = 0, points = 0;
  uint64_t seed = 0, problem_seed = 0;
  uint32_t levels = 0, bits = 0;
  bool noise_free = false, no_plot = false, rr = false, compress_cv = false, compress_downlink = false,
       elias_gamma = false;
};

// Registers --config and every override on `app` (the flag names the TOML key in its help).
void AddExperimentFlags(CLI::App& app, ExperimentFlags& flags);

// The experiment: the file of --config (if given), then every flag given on
// `app` over it, then the family's defaults. The message names the flag.
Status ExperimentFromFlags(const CLI::App& app, const ExperimentFlags& flags, ExperimentConfig& out);

}  // namespace fedrt::config
