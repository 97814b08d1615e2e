#pragma once
// Softmax regression without [model] classes (docs/data.md, "Experiment
// file"): a program that reads every shard counts K from the labels. Host code.

#include <string>

#include "fedrt/config/experiment.h"
#include "fedrt/core/status.h"

namespace fedrt::config {

// For a softmax experiment whose model.classes is absent, sets it to K = the
// largest label + 1 over every train shard and data.test (labels are the
// class indexes 0..K-1) and returns the line to log; "" when there is nothing
// to count. `reads_shards` false (a coordinator without the devices' data):
// an error naming model.classes. `skip_unreadable` (a coordinator, which
// refuses a bad shard's device: docs/data.md) counts over the shards that read.
Result<std::string> CountClasses(ExperimentConfig& cfg, bool reads_shards, bool skip_unreadable = false);

}  // namespace fedrt::config
