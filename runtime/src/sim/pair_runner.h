#pragma once
// The simulator's unit of work: one run of one algorithm (an "(algorithm,
// run) pair"), driven through the round protocol by a SessionDriver. Pairs are
// independent (every random draw is keyed by (seed, run, agent, round)), so
// they may run one after the other with each round's agents on the worker
// pool, or several at once, one pair per worker thread with its rounds inline,
// when rounds are too short for the pool to pay. Either way each pair's rows
// are the same bits; RunExperiment assembles them in (algorithm, run) order.
// Internal to the simulator.

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/task/task.h"
#include "fedrt/config/td_kernel.h"
#include "fedrt/core/status.h"
#include "fedrt/core/worker_pool.h"
#include "fedrt/problems/instance.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/sim/device_clock.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim {

// What every pair shares (read-only, or thread-safe as documented).
struct PairContext {
  const task::Task* task = nullptr;
  const problems::Instance* instance = nullptr;
  report::Evaluation* eval = nullptr;
  std::vector<std::string> names;  // per algorithm, as on the command line
  int dim = 0;                     // the reported model's length (ProblemSummary::dim)
  bool keep_theta_history = false;
  bool park_idle_agents = true;       // DriverOptions::park_idle_agents
  uint32_t gateways = 0;              // DriverOptions::gateways
  config::TdKernel kernel = config::TdKernel::kAuto;  // TD(0) local steps (sim/td_lanes.h)
  const config::PrivacySettings* privacy = nullptr;  // [privacy] (used when task->privacy.enabled)
  double max_update_norm = 0;  // [robustness] (protocol::ServerOptions; 0: the task's default)
  RankChannel* ranks = nullptr;       // a distributed run: pairs one at a time (docs/architecture.md, "MPI")
  // The virtual clock (docs/async.md; null: none), synchronous rounds'
  // deadline, and buffered asynchronous rounds (null or mode sync: rounds).
  const DeviceClock* clock = nullptr;
  double deadline_s = 0;
  const config::AsyncSettings* async = nullptr;
};

// One pair's rows (AlgorithmResult's per-run entries) and its tallies.
struct PairOutput {
  Status status;  // Ok, or the error that stopped the experiment (kCancelled is Ok: rows kept)
  std::vector<double> error, train_loss, local_loss;
  std::vector<double> epsilon;  // DP-FedAvg: epsilon spent after round t (row t; 0 in row 0)
  std::string privacy_stop;     // why the run ended before round T (privacy.epsilon_budget)
  double effective_noise = HUGE_VAL;  // distributed DP: the smallest noise multiplier a round was accounted at
  std::vector<double> clip;     // adaptive clipping: the clip round t used (row t + 1; C_0 in row 0)
  double final_clip = 0;        // adaptive clipping: C_T after the last round
  std::vector<uint32_t> agents;
  std::vector<uint64_t> bits_up, bits_down;
  std::vector<double> time_s;  // the virtual clock at each row (empty without one)
  // Asynchronous rounds: jobs dispatched, lost to devices going offline,
  // updates dropped as too stale, and the sum of the aggregated updates' staleness.
  uint64_t dispatches = 0, abandoned = 0, dropped_stale = 0, staleness_sum = 0, aggregated = 0;
  std::vector<Eigen::VectorXd> history;
  Eigen::VectorXd final_theta;
  uint64_t agent_steps = 0;
  uint64_t client_sessions = 0, parked_bytes_per_agent = 0;  // SessionDriver::seats(), parked_bytes_per_agent()
  double wall_seconds = 0.0;
  uint64_t secagg_failed = 0;
  std::string secagg_first_failure;
  bool stopped = false;  // not run to its end because another pair failed first (status kAborted)
};

using PairRoundCallback = std::function<Status(const RoundEvent&)>;

// Runs run `run` of algorithm `algorithm`; the agents' local work goes to
// `pool` (null: inline); `on_round` (may be empty) after every round; the
// evaluation's round_finished and run_finished are called on this thread.
PairOutput RunPair(const PairContext& ctx, uint32_t algorithm, uint32_t run, WorkerPool* pool,
                   const PairRoundCallback& on_round);

// Whether RunExperiment should run pairs concurrently: several pairs and
// threads, an evaluation that allows it, agents' oracles without a workspace
// (they are shared), a callback that may be called from any thread (or none),
// and rounds short enough that per-round threads lose.
bool PairsInParallel(const PairContext& ctx, const WorkerPool& pool, const SimOptions& options);

// Every pair, taken in (algorithm, run) order from a shared counter by the
// pool's threads, each pair's rounds inline. options.on_round calls are
// serialised. The first error skips pairs not yet started and ends running
// ones at their next round (`stopped`).
std::vector<PairOutput> RunPairsInParallel(const PairContext& ctx, WorkerPool& pool, const SimOptions& options);

}  // namespace fedrt::sim
