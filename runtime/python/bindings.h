#pragma once
// The Python extension module fedrt._fedrt (docs/python.md): the simulator
// driven from Python. Each file binds one part; module.cc puts them together.

#include <memory>
#include <string>

#include <pybind11/pybind11.h>

#include "fedrt/config/experiment.h"
#include "fedrt/core/status.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/array_bundle.h"

namespace fedrt::python {

namespace py = pybind11;

// Raises the Python exception that fits `status` (ValueError for bad
// settings, FileNotFoundError for a missing file, RuntimeError otherwise).
[[noreturn]] void Raise(const Status& status);
inline void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

// An experiment read and validated (bind_experiment.cc).
struct Experiment {
  config::ExperimentConfig config;
};

void BindExperiment(py::module_& m);  // experiment_keys, load_experiment, Experiment
void BindRun(py::module_& m);         // run, RunResult
void BindProblems(py::module_& m);    // array bundles, generated problems' arrays, theory
void BindPrivacy(py::module_& m);     // the privacy accountant (bind_privacy.cc)

// Named numpy arrays as an array bundle (checked as the file reader checks),
// and a list of (examples, labels or None) as per-agent shards (bind_problems.cc).
problems::ArrayBundle BundleOf(const py::dict& arrays, const std::string& source);
std::vector<data::Shard> ShardsOf(const py::list& shards);

}  // namespace fedrt::python
