#pragma once
// An experiment from a parsed TOML table rather than a file (e.g. one built
// from a Python dict, runtime/python). Host code.

#include <string>

#include <toml++/toml.h>

#include "fedrt/config/experiment.h"

namespace fedrt::config {

// An experiment file parsed (not yet read into a config): kNotFound for a
// missing file, kInvalidArgument naming file:line:column for bad TOML.
Status ParseExperimentFile(const std::string& path, toml::table& root);

// LoadExperimentToml's reader: `root` holds the file's tables, `source` names
// it in messages, relative paths resolve against `base_dir` (empty: the
// working directory).
Status LoadExperimentTable(const toml::table& root, const std::string& source, const std::string& base_dir,
                           ExperimentConfig& config);

}  // namespace fedrt::config
