// A coordinator behind its devices (docs/security.md, "State that never goes
// back"): a device's Hello names its pending update, and a round it worked
// on proves which rounds were committed before it. A state db that lacks
// them was restored from an older copy or replaced, and resuming from it
// would run those rounds again while the devices hold their results: the
// coordinator stops, names the device and the rounds, and says how to go on.
#include <fmt/format.h>

#include "coordinator_impl.h"

namespace fedrt::net::detail {

void Coordinator::stop_behind(const std::string& device, const std::string& lag) {
  if (finished_) return;
  fatal_ = Status(StatusCode::kFailedPrecondition,
                  fmt::format("device {} reports {}: the state db '{}' was rolled back or replaced. Restore the newest "
                              "state db together with its -wal (docs/security.md, \"Backing up the state\"), or give "
                              "--accept-rollback to resume from what it holds (the devices' pending updates are "
                              "refused as stale or future and the rounds after it run again)",
                              device, lag, opt_.network.state));
  CoordinatorError("fatal {}", fatal_.message());
  monitor_->set_status("failed");
  finished_ = true;
  io_.stop();
}

}  // namespace fedrt::net::detail
