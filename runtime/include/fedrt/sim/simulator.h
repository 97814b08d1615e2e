#pragma once
// The in-process simulator driver: N virtual agents running the same
// client/server cores as the coordinator and the devices, over R independent
// runs, multi-threaded over agents and deterministic for any thread count.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/problems/td_problem.h"
#include "fedrt/sim/experiment.h"

namespace fedrt::sim {

// Results of one algorithm over all runs. Generic over problem families
// (LSA / TD(0), optimisation, EM): `error` is the family's error metric.
struct AlgorithmResult {
  std::string name;  // as on the command line: "fedlsa", "scafflsa", ...
  // [run][round], round 0 is the initial iterate: ||theta_t - theta_star||^2
  std::vector<std::vector<double>> error;
  std::vector<std::vector<uint32_t>> agents;      // agents that reported in round t (0 for t = 0)
  std::vector<std::vector<uint64_t>> bits_up;     // uplink payload bits in round t
  std::vector<std::vector<uint64_t>> bits_down;   // downlink payload bits in round t
  std::vector<Eigen::VectorXd> final_theta;       // per run
  std::vector<std::vector<Eigen::VectorXd>> theta_history;  // [run][round], only if requested
  double wall_seconds = 0.0;
  uint64_t agent_steps = 0;
  std::optional<double> predicted_bias_sq;             // ||bias_T||^2 where theory gives one
  std::optional<double> predicted_bias_sq_stationary;  // ||bias_inf||^2
  nlohmann::json extra = nlohmann::json::object();     // family-specific summary fields
};

struct ProblemSummary {
  std::string description;
  int agents = 0;
  int dim = 0;
  Eigen::VectorXd theta_star;  // the exact solution (theta_star, x_star, or the EM fixed point)
  double delta_het = 0.0;
  int oracle_atoms_max = 0;  // largest alias table (stochastic TD oracle)
  nlohmann::json extra = nlohmann::json::object();  // family-specific problem facts
};

struct SimResult {
  ExperimentConfig config;
  // The error metric, as a plot label and a name (summary.json "error_metric").
  std::string error_metric = "||theta_t - theta_star||^2";
  std::string error_label = "‖θ_t − θ*‖²";
  nlohmann::json settings = nlohmann::json::object();  // family-specific settings (merged into summary)
  ProblemSummary problem;
  std::vector<AlgorithmResult> algorithms;
  int threads = 1;
};

// One round finished (for progress reports).
struct RoundEvent {
  size_t algorithm_index;
  std::string algorithm;
  long run;
  long round;   // 1..T
  double error;
};

struct SimOptions {
  std::function<void(const RoundEvent&)> on_round;  // called on the driver thread
  bool keep_theta_history = false;
};

// Builds the federated TD(0) problem of `config` (Garnet or an array-bundle file).
Result<problems::TdProblem> BuildProblem(const ExperimentConfig& config);

// Runs every algorithm of `config` for config.runs runs, dispatching on the
// problem family (LSA / TD(0) here; other families in their own modules).
Result<SimResult> RunExperiment(const ExperimentConfig& config, const SimOptions& options = {});
// The federated LSA / TD(0) family (problem garnet or file).
Result<SimResult> RunLsaExperiment(const ExperimentConfig& config, const SimOptions& options);

}  // namespace fedrt::sim
