#include "fedrt/coordinator/startup_checks.h"

#include <fmt/format.h>

namespace fedrt::net {

Status CheckFleetExperiment(const config::ExperimentConfig& cfg, const task::Task& task) {
  if (task.secagg.enabled && task.secagg.dropout > 0.0)
    return Status::InvalidArgument("compression.secagg_dropout is simulator-only: a fleet's dropouts are real (set it to 0)");
  // Central DP-FedAvg runs on the fleet (coordinator/privacy_rounds.h); the
  // distributed mechanism is refused by config::Validate for every driver.
  if (cfg.privacy.on() && cfg.privacy.mechanism != "central")
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("privacy.mechanism = \"{}\" is not on the fleet: set \"central\" or \"none\" "
                              "(docs/privacy.md)",
                              cfg.privacy.mechanism));
  return Status::Ok();
}

}  // namespace fedrt::net
