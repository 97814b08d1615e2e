#pragma once
// What the coordinator shows of itself on its dashboard and metrics
// (ops/fleet_monitor.h, docs/dashboard.md): the run's settings as api/run
// carries them, and the short reason a handshake failed, as a metric label.
// Host code.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fedrt/config/experiment.h"
#include "fedrt/task/task.h"
#include "fedrt/coordinator/network_config.h"

namespace fedrt::net {

// api/run's fixed part: experiment, problem, agents, dim, algorithms, runs,
// rounds, local steps, SecAgg+, auth, deadline, quorum, the error metric and
// a flat "settings" object of the rest.
nlohmann::json DashboardRun(const std::string& name, const task::Task& task, const config::ExperimentConfig& cfg,
                            const NetworkConfig& net, const std::vector<std::string>& algorithms,
                            const std::string& error_metric);
// mbedTLS's error code of a failed handshake as a metric label
// (unknown_psk_identity, bad_psk, not_tls, bad_certificate, eof, other).
std::string HandshakeFailureLabel(int mbedtls_error);

}  // namespace fedrt::net
