#pragma once
// The plain task of an experiment (config/task.h) from its host settings:
// what the sessions run, whatever the driver. Host code.

#include <string>

#include "fedrt/config/task.h"
#include "fedrt/core/status.h"
#include "fedrt/sim/experiment.h"

namespace fedrt::sim {

// Algorithm names ("fedavg", "scaffold-rr", ...) to the task's choices,
// with --rr expanding each optimisation algorithm to its Fed-RR twin.
Result<config::Task> MakeTask(const ExperimentConfig& cfg);
Result<config::AlgorithmChoice> ParseAlgorithmChoice(const std::string& name);

}  // namespace fedrt::sim
