#pragma once
// The in-process simulator driver: N virtual agents running the same
// client/server cores as the coordinator and the devices, over R independent
// runs, multi-threaded over agents (or over whole runs when rounds are
// short, docs/architecture.md) and deterministic for any thread count.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/problems/instance.h"
#include "fedrt/problems/td_problem.h"
#include "fedrt/report/results.h"
#include "fedrt/config/experiment.h"
#include "fedrt/sim/rank_exchange.h"

namespace fedrt::sim {

using report::AlgorithmResult;
using report::ProblemSummary;
using report::SimResult;

// One round finished (for progress reports).
struct RoundEvent {
  size_t algorithm_index;
  std::string algorithm;
  long run;
  long round;   // 1..T
  double error;
  const double* model = nullptr;  // the global iterate after this round (dim values)
  int dim = 0;
};

struct SimOptions {
  // Called on the driver thread after every round. Ok goes on; kCancelled
  // ends this run after this round (its rows so far are kept, the next run
  // or algorithm starts); any other error stops the experiment with it.
  std::function<Status(const RoundEvent&)> on_round;
  // True lets the simulator run whole runs at once (short rounds, see
  // docs/architecture.md, "What the simulator runs in parallel") with
  // on_round called from its worker threads: one call at a time, each run's
  // rounds in order, different runs interleaved. False
  // keeps on_round on the calling thread, runs in (algorithm, run) order.
  // Results are the same bits either way.
  bool on_round_any_thread = false;
  bool keep_theta_history = false;
  // Agents a round does not call on keep only their state between rounds
  // (sim/session_driver.h); false keeps a whole session per agent (the same
  // results with more memory; tests compare the two).
  bool park_idle_agents = true;
  // G > 0: the agents sit behind G gateways (agent c behind c mod G), each
  // handing one partial aggregate per round up to the coordinator
  // (sim/gateway_hub.h): the same results, through the gateways' code path.
  uint32_t gateways = 0;
  // A distributed run (MPI, sim/rank_exchange.h): this process is one rank;
  // every rank computes the same result. on_round must answer alike on all,
  // and the (algorithm, run) pairs must run in the same order on all, one
  // at a time: their exchanges share one sequence of collectives.
  RankChannel* ranks = nullptr;
  // Set to true once the experiment's inputs (task, data files, evaluation)
  // are built and the runs start: an error before is in what the experiment
  // asked for (fedrt-sim's exit code 2), after it the run failed (1).
  bool* started = nullptr;
};

// The federated TD(0) problem of `config` (Garnet or an array-bundle file),
// and the data of a least-squares / logistic problem.
Result<problems::TdProblem> BuildProblem(const config::ExperimentConfig& config);
Result<problems::FedDataset> BuildFedData(const config::ExperimentConfig& config);

// Runs every algorithm of `config` for config.runs runs through the round
// protocol, messages in memory, and measures each round with the family's
// evaluation (report/evaluation.h).
Result<SimResult> RunExperiment(const config::ExperimentConfig& config, const SimOptions& options = {});

}  // namespace fedrt::sim
