#pragma once
// The results of running an experiment, whichever driver ran it: per
// algorithm and run the error metric, participants and bits of every round,
// the final iterates and the family's summary fields. The simulator fills
// them as rounds close; the coordinator from its round log. Host code.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "fedrt/config/experiment.h"

namespace fedrt::report {

using config::ExperimentConfig;

// Results of one algorithm over all runs. Generic over problem families
// (LSA / TD(0), optimisation, EM): `error` is the family's error metric.
struct AlgorithmResult {
  std::string name;  // as on the command line: "fedlsa", "scafflsa", ...
  // [run][round], round 0 is the initial iterate: ||theta_t - theta_star||^2
  std::vector<std::vector<double>> error;
  std::vector<std::vector<uint32_t>> agents;      // agents that reported in round t (0 for t = 0)
  std::vector<std::vector<uint64_t>> bits_up;     // uplink payload bits in round t
  std::vector<std::vector<uint64_t>> bits_down;   // downlink payload bits in round t
  // The virtual clock ([devices] or algorithm.mode = "async"): seconds at
  // the end of round (or server step) t, [run][round]; empty without one.
  std::vector<std::vector<double>> time_s;
  // Own-data tasks: [run][round], row t + 1 holds round t's device reports:
  // train_loss = mean over its members of f_c at the model they received
  // (x_t), local_loss = the same at their local models after the local work;
  // NaN in row 0 and in rounds without reports. Empty otherwise.
  std::vector<std::vector<double>> train_loss, local_loss;
  // With a held-out test file ([data] test): loss and accuracy of x_t, row t.
  std::vector<std::vector<double>> test_loss, test_accuracy;
  // Central DP-FedAvg ([privacy]): epsilon spent after round t, [run][round]; empty otherwise.
  std::vector<std::vector<double>> epsilon;
  // Adaptive clipping: the clip C_t round t used, row t + 1 (row 0: C_0); empty otherwise.
  std::vector<std::vector<double>> clip;
  std::vector<Eigen::VectorXd> final_theta;       // per run
  std::vector<std::vector<Eigen::VectorXd>> theta_history;  // [run][round], only if requested
  double wall_seconds = 0.0;
  uint64_t agent_steps = 0;
  // Simulator memory: the most client sessions a run held (the agents its
  // largest round called on, or all of them when idle agents are not parked)
  // and the bytes each parked agent keeps between rounds (sim/session_driver.h).
  uint64_t client_sessions = 0;
  uint64_t parked_bytes_per_agent = 0;
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
  bool concurrent_runs = false;  // the simulator ran several runs at once, one per thread
  double run_seconds = 0.0;      // elapsed time of all runs (problem generation excluded)
};

}  // namespace fedrt::report
