#pragma once
// The results of a fleet run, read back from the coordinator's round log
// (coordinator/state_store.h) in the simulator's form (report/results.h): per
// algorithm and run the error of every committed round, its members and
// bits, and the family's extras, which the evaluation computes from the
// server state persisted with each round. A run stopped early leaves NaN for
// the rounds it did not reach. Host code.

#include "fedrt/task/task.h"
#include "fedrt/config/experiment.h"
#include "fedrt/core/status.h"
#include "fedrt/coordinator/state_store.h"
#include "fedrt/problems/instance.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/report/results.h"

namespace fedrt::net {

// `out` arrives with config, settings and problem filled by the caller (and
// the evaluation's describe()); this adds one AlgorithmResult per algorithm.
// With central DP-FedAvg (`privacy` set and task.privacy.enabled) each run
// gets the simulator's epsilon column and summary fields
// (report/privacy_summary.h), and a run the budget ended has the rows up to
// its last round only, as fedrt-sim writes them.
Status FleetResult(const task::Task& task, const problems::Instance& instance, report::Evaluation& eval,
                   StateStore& store, report::SimResult& out, const config::PrivacySettings* privacy = nullptr);

// devices.csv: one row per device and round it was a member of, from the
// round log: algorithm,run,round,device,examples,loss_before,loss_after,
// duration_ms,bytes_down,bytes_up (docs/data.md, "Reports"). `ids` names the
// devices by index.
Status WriteDeviceReports(const task::Task& task, const std::vector<std::string>& names,
                          const std::vector<std::string>& ids, StateStore& store, const std::string& path);

}  // namespace fedrt::net
