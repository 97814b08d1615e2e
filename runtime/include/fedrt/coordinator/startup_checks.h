#pragma once
// What the fleet refuses before it starts, beyond config::Validate (which
// the simulator shares): settings that only the simulator can honour. Each
// refusal names the key and says what to set instead. Host code.

#include "fedrt/config/experiment.h"
#include "fedrt/core/status.h"
#include "fedrt/task/task.h"

namespace fedrt::net {

Status CheckFleetExperiment(const config::ExperimentConfig& cfg, const task::Task& task);

}  // namespace fedrt::net
