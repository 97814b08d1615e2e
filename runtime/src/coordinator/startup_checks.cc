// What the coordinator does before it listens: the task every device
// receives, built and checked once (CheckFleetExperiment: what only the
// simulator can honour), the problem instance and its evaluation, and
// DP-FedAvg's budget (coordinator/privacy_rounds.h).
#include "fedrt/coordinator/startup_checks.h"

#include <malloc.h>  // malloc_trim (glibc)

#include <fmt/format.h>

#include "coordinator_impl.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/protocol/dp_round_sigma.h"
#include "fedrt/task/names.h"

namespace fedrt::net {

Status CheckFleetExperiment(const config::ExperimentConfig& cfg, const task::Task& task) {
  if (task.secagg.enabled && task.secagg.dropout > 0.0)
    return Status::InvalidArgument("compression.secagg_dropout is simulator-only: a fleet's dropouts are real (set it to 0)");
  // Both DP-FedAvg mechanisms run on the fleet (coordinator/privacy_rounds.h);
  // config::Validate refused what no driver runs.
  return Status::Ok();
}

// Distributed DP: the group must hold a likely round's noised sum, as fedrt-sim
// checks before its run; `task` has the problem's N and d (devices' own data:
// from the shards).
static Status CheckDistributedGroup(const task::Task& task) {
  uint32_t likely = 0;
  if (const char* why = protocol::DpLikelyRoundFits(task, &likely))
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} (checked for {} sampled devices, q N + 6 sqrt(q N))", why, likely));
  return Status::Ok();
}

}  // namespace fedrt::net

namespace fedrt::net::detail {

// The task every device receives, and the fleet's limits on it.
Status Coordinator::prepare_task() {
  const config::ExperimentConfig& cfg = opt_.experiment;
  FEDRT_TRY(config::Validate(cfg));
  FEDRT_TRY(ValidateNetwork(opt_.network));
  auto task = config::MakeTask(cfg);
  if (!task.ok()) return task.status();
  task_ = *task;
  FEDRT_TRY(CheckFleetExperiment(cfg, task_));
  auto inst = config::BuildInstance(cfg, /*at_coordinator=*/true);
  if (!inst.ok()) return inst.status();
  instance_ = std::move(*inst);
  for (const problems::SkippedShard& bad : instance_->skipped_shards()) bad_shards_[bad.agent] = bad.why;
  task_.problem = instance_->problem();  // with the data fingerprint of a problem read from files
  FEDRT_TRY(CheckDistributedGroup(task_));
  auto eval = report::Evaluation::Make(task_, config::DataFilesOf(cfg, /*at_coordinator=*/true), *instance_, nullptr);
  if (!eval.ok()) return eval.status();
  eval_ = std::move(*eval);
  // The evaluation holds what it needs of the agents' systems; the rest would
  // make the coordinator's memory grow with the fleet (docs/scale.md).
  instance_->drop_agents();
#ifdef __GLIBC__
  malloc_trim(0);  // hand the freed pages back before the first connection
#endif
  for (uint32_t a = 0; a < task_.num_algorithms; ++a) names_.push_back(task::AlgorithmName(task_.algorithms[a]));
  return privacy_.init(cfg.privacy, AccountedTask(), names_);
}

}  // namespace fedrt::net::detail
