#pragma once
// The federated EM family's driver (problem gmm): FedEM, naive FedEM and
// VR-FedEM on a heterogeneous Gaussian mixture (ALGORITHMS.md 1.5, 5), with
// partial participation and compressed uplinks. Error metric ||h(Shat_k)||^2;
// summary.json also reports ||T(Shat_k) - theta_EM||^2, the distance of the
// mixture parameters to the exact EM fixed point.

#include "fedrt/core/status.h"
#include "fedrt/sim/experiment.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim {

Result<SimResult> RunEmExperiment(const ExperimentConfig& config, const SimOptions& options);

}  // namespace fedrt::sim
