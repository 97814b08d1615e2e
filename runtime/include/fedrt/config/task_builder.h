#pragma once
// The plain task of an experiment (task/task.h) from its host settings:
// what the sessions run, whatever the driver, and the problem instance it
// names. Host code.

#include <memory>
#include <string>

#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/config/experiment.h"
#include "fedrt/problems/instance.h"

namespace fedrt::config {

// Algorithm names ("fedavg", "scaffold-rr", ...) to the task's choices,
// with --rr expanding each optimisation algorithm to its Fed-RR twin.
Result<task::Task> MakeTask(const ExperimentConfig& cfg);
Result<task::AlgorithmChoice> ParseAlgorithmChoice(const std::string& name);

// The data files `config` names (an array bundle, CSV data), for Instance::Build.
// `at_coordinator`: for fedrt-coordinator, which reads the shards only when
// data.coordinator_reads_shards and generates a problem's data only when
// problem.coordinator_generates (the simulator trains them: it always does).
problems::DataFiles DataFilesOf(const ExperimentConfig& config, bool at_coordinator = false);
// Every agent's data and oracle of `config`'s problem (problems/instance.h),
// checking an explicit --agents against a problem read from files.
Result<std::unique_ptr<problems::Instance>> BuildInstance(const ExperimentConfig& config, bool at_coordinator = false);

}  // namespace fedrt::config
