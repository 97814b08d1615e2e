#pragma once
// Instance: every agent's local problem of a task, built the one way every
// driver builds it (docs/architecture.md, "The task travels"): the simulator
// runs all agents, the coordinator evaluates the global iterate on them, and a
// device keeps its own agent's. Generated problems come from the task's
// generator settings and seed alone (Garnet MDPs, synthetic least squares or
// logistic data, Gaussian mixtures); problems read from files (an array
// bundle, CSV data) need the files. Host code.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/array_bundle.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/problems/gmm_data.h"
#include "fedrt/problems/local_problem.h"
#include "fedrt/problems/td_problem.h"
#include "fedrt/user_model.h"

namespace fedrt::problems {

// Where a problem read from files comes from.
struct DataFiles {
  std::string bundle;  // federated TD(0) array bundle (problem kind file)
  // The bundle already in memory (arrays from Python): used instead of
  // reading `bundle`, which then only names it.
  std::shared_ptr<const ArrayBundle> bundle_arrays;
  std::string csv;     // least squares / logistic: a directory of per-agent CSV files or one CSV
  ShardFiles shards;   // least squares / logistic: one shard file per agent ([data], docs/data.md)
  std::string test;    // [data] test: a held-out file the evaluation scores every round's model on
  std::vector<double> initial;  // a user model's x_0, or gmm's G means ([model] init; empty: zeros / k-means++)
  // false: the caller (a coordinator) does not hold the shards (docs/data.md):
  // an own-data least squares / logistic / softmax instance then has no data,
  // its d from `features` (p) or, when 0, from the header of `test`.
  bool read_shards = true;
  uint32_t features = 0;
  // true (a coordinator that reads the shards): a shard that does not read is
  // left out (Instance::skipped_shards) instead of failing the build.
  bool skip_bad_shards = false;
  // >= 0: a device that is this agent: a generated problem builds this
  // agent's data and oracle only (the others' would cost N times the memory).
  int only_agent = -1;
  // false: the caller (a coordinator with problem.coordinator_generates =
  // false) does not generate the agents' data of a generated least squares /
  // logistic problem: the instance then has the task's agents and d, x_0 = 0,
  // and no data.
  bool generate = true;
};

// fedprox-exact solves a d x d system per agent and round: refused (by name)
// for least squares above d = kDenseLeastSquaresMaxDim, whose Abar_c is not kept.
Status CheckFedProxExact(const task::Task& task, int dim);

class Instance {
 public:
  // Builds every agent's data and oracle. For problems read from files the
  // returned instance's problem() has agents, dim and data_fingerprint filled
  // in (task::ProblemFingerprint covers the data).
  static Result<std::unique_ptr<Instance>> Build(const task::Task& task, const DataFiles& files);
  // A device's instance of an own-data task (problem().own_data): only
  // `agent`'s shard, read from `shard`; local(agent) is its oracle.
  static Result<std::unique_ptr<Instance>> BuildOwn(const task::Task& task, uint32_t agent, const std::string& shard);
  // The same from a shard already in memory (a caller's data source).
  static Result<std::unique_ptr<Instance>> BuildOwn(const task::Task& task, uint32_t agent, const data::Shard& shard);
  // A device's instance of a user-model task (kind kUser): `agent`'s shard
  // and the program's model, whose dim must be the task's; its features (if
  // not 0) must be the shard's.
  static Result<std::unique_ptr<Instance>> BuildOwnUser(const task::Task& task, uint32_t agent, data::Shard shard,
                                                        const UserModel& model);

  const task::ProblemSpec& problem() const { return problem_; }
  uint32_t agents() const { return problem_.agents; }
  // The shards left out (DataFiles::skip_bad_shards): their agents keep their
  // index; the data, x_star and error are over the shards that read.
  const std::vector<SkippedShard>& skipped_shards() const { return skipped_; }
  // Agent c's oracle, as the client session takes it.
  problems::LocalProblem<double> local(uint32_t agent) const;
  const std::vector<problems::LocalProblem<double>>& locals() const { return locals_; }
  // The family's initial iterate (docs/algorithms.md 1): LSA theta* + (1, ..., 1),
  // optimisation x_0 = 0, EM Shat_0.
  const std::vector<double>& initial_iterate() const { return initial_; }

  // The problem itself, for evaluation (one of them is set, none for a user
  // model or an instance built without the agents' data).
  const TdProblem* td() const { return td_ ? &*td_ : nullptr; }
  const FedDataset* fed() const { return fed_ ? &*fed_ : nullptr; }
  const GmmData* gmm() const { return gmm_ ? &*gmm_ : nullptr; }
  int max_alias_atoms() const { return max_atoms_; }  // largest TD(0) sampling table

  // For a coordinator of the LSA family, once its evaluation is made (it
  // keeps theta*, Delta_het and the FedLSA bias, docs/algorithms.md 6):
  // frees every agent's Abar_c, bbar_c, rewards, stationary law and oracle,
  // which only devices and the simulator sample. The coordinator's memory
  // after startup then does not grow with the fleet (docs/scale.md).
  // td() keeps phi, the policy and theta*; locals() is empty afterwards.
  // No-op for the other families, whose evaluations read their data.
  void drop_agents();

 private:
  Status build_td(const task::Task& task, const DataFiles& files);
  // TD(0) on the agents' own transitions (td_transitions.cc).
  Status build_td_transitions(const task::Task& task, const DataFiles& files);
  Status build_own_transitions(const task::Task& task, uint32_t agent, const std::string& path);
  Status build_fed(const task::Task& task, const DataFiles& files);
  Status build_fed_oracles(const task::Task& task, int first, int last);
  Status build_gmm(const task::Task& task);
  // Gaussian mixtures on the agents' own shards (instance_gmm.cc): every
  // shard (or, without them, G, p and the init only), and one device's.
  Status build_gmm_shards(const task::Task& task, const DataFiles& files);
  Status build_own_gmm(const task::Task& task, uint32_t agent, const data::Shard& shard);
  Status build_user(const task::Task& task, const DataFiles& files);
  // A coordinator's instance without the agents' data (read_shards = false,
  // or generate = false): agents and d only, x_0 = 0 (instance_blind.cc).
  Status build_blind(const task::Task& task, const DataFiles& files);

  task::ProblemSpec problem_;
  std::optional<TdProblem> td_;
  std::optional<FedDataset> fed_;
  std::vector<SkippedShard> skipped_;
  std::optional<GmmData> gmm_;
  std::vector<uint8_t> oracle_memory_;
  std::vector<TdOracle<double>> td_oracles_;
  std::vector<ExpectedLsaOracle<double>> expected_oracles_;
  std::vector<LeastSquaresOracle<double>> lsq_oracles_;
  std::vector<LogisticOracle<double>> logistic_oracles_;
  std::vector<SoftmaxOracle<double>> softmax_oracles_;
  std::vector<GmmOracle<double>> gmm_oracles_;
  std::optional<data::Shard> user_shard_;
  std::vector<UserModelOracle<double>> user_oracles_;
  std::vector<problems::LocalProblem<double>> locals_;
  std::vector<double> initial_;
  int max_atoms_ = 0;
};

}  // namespace fedrt::problems
