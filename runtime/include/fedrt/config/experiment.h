#pragma once
// ExperimentConfig: one experiment (problem, algorithms, participation, run
// settings), read from a TOML experiment file and overridden by flags. The
// same file drives the simulator and, later, the coordinator and fleets.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/array_bundle.h"
#include "fedrt/problems/garnet.h"
#include "fedrt/config/compression_em.h"
#include "fedrt/config/devices.h"
#include "fedrt/secagg/settings.h"

namespace fedrt::config {

// Settings of the federated optimisation family (problem lsq / logistic);
// agents and dim are shared with the other families (garnet.agents, garnet.dim).
struct OptSettings {
  // [problem]
  long samples = 200;            // mean n_c of synthetic data
  double covariate_shift = 0.0;  // strengths of the heterogeneity kinds
  double concept_shift = 0.0;
  double quantity_skew = 0.0;
  double noise = 0.5;            // least-squares label noise std
  double l2 = 0.01;              // lambda of logistic / softmax regression (least squares: ridge, when set)
  bool l2_set = false;           // l2 given (problem.l2, model.l2 or --l2): least squares is ridge only then
  std::string data;              // CSV directory (one file per agent) or file with an agent column
  // [problem] coordinator_generates: false when fedrt-coordinator should not
  // generate the agents' synthetic data (README.md, "The coordinator
  // generates no data"): it then holds only d and x_0 = 0, and reports no
  // x_star (the error column is NaN). Generated lsq and logistic problems
  // only; the simulator, which trains every agent, generates their data anyway.
  bool coordinator_generates = true;
  // [algorithm]
  long batch = 0;                // B samples per stochastic gradient; 0 = full gradient
  double prox_mu = 1.0;          // FedProx weight mu
  bool rr = false;               // wrap with Federated Richardson-Romberg
  double server_step = 1.0;      // eta_g
  std::optional<long> burn_in;   // Fed-RR burn-in rounds (default T/2)
};

// [data] and [model]: each agent's examples read from its own shard file
// (docs/data.md) instead of being generated from the seed.
struct DataSettings {
  std::string format = "generated";  // generated | csv | records
  std::string train;                 // shard pattern with {id} (resolved against the experiment file)
  std::string test;                  // held-out file, scored at every round's model (optional)
  std::string label = "label";       // CSV label column
  std::string model;                 // [model] kind, as written
  long classes = 0;                  // [model] classes: softmax's K (labels 0..K-1)
  std::optional<bool> intercept;     // [model] intercept: z = (a, 1) (default: on for softmax, off otherwise)
  long user_dim = 0;                 // [model] kind = "user": dim, the parameter count d
  std::vector<double> user_init;     // [model] init: a user model's x_0 (empty: zeros), or gmm's
                                     // G means mu_1..mu_G (G p numbers; empty: k-means++ seeding)
  long components = 0;               // [model] components: G of kind = "gmm" on shards (1..64)
  // [data] coordinator_reads_shards: false when the coordinator's machine does
  // not hold the devices' shards (docs/data.md): it then needs problem.agents
  // and the model's dimension (model.features or data.test), and reports no
  // x_star (the error column is NaN). The simulator reads the shards anyway.
  bool coordinator_reads_shards = true;
  long features = 0;                 // [model] features: p, feature columns per example (with the above)
  // Every agent's examples given in memory (numpy arrays, runtime/python):
  // read instead of the files of `train`, which then only names them.
  std::shared_ptr<const std::vector<data::Shard>> arrays;
  bool own() const { return format != "generated"; }
};

// [robustness]: the server's bounds on what one device can send
// (docs/security.md, "What a malicious device can do to the model").
struct RobustnessSettings {
  // The largest L2 norm of an update the server takes (protocol::ServerUplink);
  // 0: protocol::DefaultMaxUpdateNorm of the task.
  double max_update_norm = 0;
};

// [privacy]: DP-FedAvg at the device level (docs/privacy.md, "DP-FedAvg in
// the simulator"). mechanism "none" leaves every round as it was.
struct PrivacySettings {
  std::string mechanism = "none";     // none | central | distributed
  double clip = 1.0;                  // L2 bound of a device's round update
  double noise_multiplier = 1.1;      // sigma: noise std sigma * clip on the sum
  double delta = 1e-5;                // the delta of the reported (epsilon, delta)
  std::optional<double> epsilon_budget;     // no round starts that would exceed it
  std::optional<double> adaptive_quantile;  // adaptive clipping toward this quantile (config/adaptive_clip.h)
  std::optional<uint64_t> test_seed;        // reproducible noise: NOT private
  double quorum = 0.8;                // distributed: m = ceil(quorum n) survivors carry the noise
  uint32_t device_variance = 1u << 16;  // distributed: each device's integer noise variance s2
  bool on() const { return mechanism != "none"; }
};

struct ExperimentConfig {
  // [problem]
  task::ProblemKind problem = task::ProblemKind::kGarnet;
  std::string problem_file;  // array bundle, for ProblemKind::kBundle
  // The bundle given in memory instead (numpy arrays, runtime/python):
  // problem_file then only names it.
  std::shared_ptr<const problems::ArrayBundle> problem_arrays;
  problems::GarnetConfig garnet;  // agents, heterogeneity, sizes, gamma, epsilon
  std::optional<uint64_t> problem_seed;  // defaults to `seed`
  bool noise_free = false;  // expected-operator oracle
  bool agents_set = false;  // `agents` was given explicitly (checked against a problem file)
  OptSettings opt;          // lsq / logistic problems and their algorithms
  DataSettings data;        // [data], [model]
  GmmSettings gmm;          // [gmm]: Gaussian mixture and FedEM settings (problem gmm)
  CompressionSettings compression;  // [compression]: uplink (and downlink) codec
  secagg::SecAggSettings secagg;   // [compression] secure_aggregation, secagg_*: SecAgg+ on the uplink
  PrivacySettings privacy;         // [privacy]
  RobustnessSettings robustness;   // [robustness]
  // [algorithm]
  // Algorithm names as on the command line; each problem family knows its own
  // (KnownAlgorithms) and its simulator maps them to its cores.
  std::vector<std::string> algorithms = {"fedlsa", "scafflsa"};
  bool algorithms_set = false;  // given in the file or on the command line (else the family's default)
  double step = 0.01;         // eta
  long local_steps = 1000;    // H
  std::optional<double> comm_prob;  // p for scafflsa-prob (default 1/H)
  AsyncSettings async;              // mode = "async": buffered asynchronous aggregation (config/devices.h)
  DevicesSettings devices;          // [devices]: the simulator's virtual clock (config/devices.h)
  // [participation]
  double participation = 1.0;  // q
  // [run]
  long rounds = 100;   // T
  long runs = 1;       // R
  uint64_t seed = 1;
  int threads = 0;     // 0 = all hardware threads
  std::string kernel = "auto";  // TD(0) local steps: auto, scalar, portable, avx2 (config/td_kernel.h; same results)
  std::string out = "out/sim";
  bool plot = true;

  uint64_t effective_problem_seed() const { return problem_seed.value_or(seed); }
  double effective_comm_prob() const { return comm_prob.value_or(1.0 / static_cast<double>(local_steps)); }
};

// Splits a comma-separated algorithm list ("fedlsa,scafflsa"); rejects empty
// names and duplicates (names are checked against the family by Validate).
Result<std::vector<std::string>> ParseAlgorithms(const std::string& list);
std::string AlgorithmList(const std::vector<std::string>& algs);
// The algorithms a problem family runs, e.g. {"fedlsa", "scafflsa", "scafflsa-prob"}.
std::vector<std::string> KnownAlgorithms(task::ProblemKind kind);
// The algorithms a family runs when none are named (the comparison it exists for).
std::vector<std::string> DefaultAlgorithms(task::ProblemKind kind);
// Replaces the algorithm list by the family's default unless it was given.
void ApplyFamilyDefaults(ExperimentConfig& config);
// Maps a name of the LSA family to its core ("fedlsa" -> kFedLsa).
Result<algorithms::LsaAlgorithm> LsaAlgorithmFromName(const std::string& name);
Result<problems::Heterogeneity> ParseHeterogeneity(const std::string& s);
Result<task::ProblemKind> ParseProblemKind(const std::string& s);

// Reads a TOML experiment file into `config` (keys absent from the file keep
// their value). Unknown keys and wrong types are errors naming the key.
// Relative paths in the file are resolved against the file's directory.
Status LoadExperimentToml(const std::string& path, ExperimentConfig& config);
// LoadExperimentTable (fedrt/config/experiment_toml.h) reads a parsed table.
// Every table of an experiment file and the keys it accepts, e.g.
// {"run": {"out", "plot", "rounds", ...}, ...} ([network] is the fleet's).
std::map<std::string, std::vector<std::string>> ExperimentKeys();

// Checks ranges and consistency; the message names the offending setting.
Status Validate(const ExperimentConfig& config);
// The [compression] and [gmm] settings (runtime/src/config/compression_em.cc; called by Validate).
Status ValidateCompressionEm(const ExperimentConfig& config);
// secure_aggregation and secagg_* (runtime/src/config/secagg_settings.cc; called by Validate).
Status ValidateSecAgg(const ExperimentConfig& config);
// The [privacy] table: ranges, and the families and settings DP-FedAvg
// cannot run with, each message naming the key (runtime/src/config/privacy_settings.cc).
Status ValidatePrivacy(const ExperimentConfig& config);
// problem.coordinator_generates = false: generated lsq and logistic problems
// only, the message naming the key and why (runtime/src/config/coordinator_generates.cc).
Status ValidateCoordinatorGenerates(const ExperimentConfig& config);

}  // namespace fedrt::config
