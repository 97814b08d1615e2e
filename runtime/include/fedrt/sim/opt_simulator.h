#pragma once
// Simulator driver of the federated optimisation family (problems lsq and
// logistic; FedAvg, Scaffold, FedProx, FedProx-exact, and their Federated
// Richardson-Romberg wrappers "<name>-rr"). Same outputs as the LSA driver;
// the error metric is ||x_t - x_star||^2.

#include "fedrt/core/status.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/sim/experiment.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim {

// The data of `config`: CSV (opt.data) or synthetic (agents, dim, samples, shifts).
Result<problems::FedDataset> BuildFedData(const ExperimentConfig& config);

Result<SimResult> RunOptExperiment(const ExperimentConfig& config, const SimOptions& options);

}  // namespace fedrt::sim
