#include "fedrt/config/task_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/task/names.h"

namespace fedrt::config {

Result<task::AlgorithmChoice> ParseAlgorithmChoice(const std::string& name) {
  for (unsigned k = 0; k <= static_cast<unsigned>(task::AlgorithmKind::kVrFedEm); ++k) {
    for (bool rr : {false, true}) {
      const task::AlgorithmChoice a{static_cast<task::AlgorithmKind>(k), rr};
      if (rr && task::FamilyOf(a.kind) != task::Family::kOpt) continue;
      if (name == task::AlgorithmName(a)) return a;
    }
  }
  return Status(StatusCode::kInvalidArgument, fmt::format("unknown algorithm '{}'", name));
}

Result<task::Task> MakeTask(const ExperimentConfig& cfg) {
  task::Task t;
  task::ProblemSpec& p = t.problem;
  switch (cfg.problem) {
    case task::ProblemKind::kGarnet: p.kind = task::ProblemKind::kGarnet; break;
    case task::ProblemKind::kBundle: p.kind = task::ProblemKind::kBundle; break;
    case task::ProblemKind::kLeastSquares: p.kind = task::ProblemKind::kLeastSquares; break;
    case task::ProblemKind::kLogistic: p.kind = task::ProblemKind::kLogistic; break;
    case task::ProblemKind::kGmm: p.kind = task::ProblemKind::kGmm; break;
    case task::ProblemKind::kSoftmax: p.kind = task::ProblemKind::kSoftmax; break;
    case task::ProblemKind::kUser: p.kind = task::ProblemKind::kUser; break;
  }
  p.agents = static_cast<uint32_t>(cfg.garnet.agents);
  p.dim = static_cast<uint32_t>(cfg.garnet.dim);
  p.seed = cfg.effective_problem_seed();
  p.from_files = cfg.problem == task::ProblemKind::kBundle || !cfg.opt.data.empty() || cfg.data.own();
  if (cfg.data.own()) {
    p.own_data = true;
    p.data_format = cfg.data.format == "records" ? 1 : 0;
    if (cfg.data.label.empty() || cfg.data.label.size() > task::kMaxLabelChars)
      return Status(StatusCode::kInvalidArgument, fmt::format("data.label '{}': 1 to {} characters", cfg.data.label,
                                                              task::kMaxLabelChars));
    std::memcpy(p.label, cfg.data.label.c_str(), cfg.data.label.size() + 1);
  }
  if (cfg.problem == task::ProblemKind::kSoftmax) {
    p.classes = static_cast<uint32_t>(cfg.data.classes);
    p.intercept = cfg.data.intercept.value_or(true);
  } else if (cfg.problem == task::ProblemKind::kLeastSquares || cfg.problem == task::ProblemKind::kLogistic) {
    p.intercept = cfg.data.intercept.value_or(false);
  }
  p.garnet.states = static_cast<uint32_t>(cfg.garnet.n_states);
  p.garnet.actions = static_cast<uint32_t>(cfg.garnet.n_actions);
  p.garnet.branching = static_cast<uint32_t>(cfg.garnet.branching);
  p.garnet.gamma = cfg.garnet.gamma;
  p.garnet.epsilon = cfg.garnet.epsilon;
  p.garnet.heterogeneity =
      cfg.garnet.heterogeneity == problems::Heterogeneity::kHigh ? task::Heterogeneity::kHigh : task::Heterogeneity::kLow;
  p.garnet.noise_free = cfg.noise_free;
  p.synthetic.samples = static_cast<uint32_t>(cfg.opt.samples);
  p.synthetic.covariate_shift = cfg.opt.covariate_shift;
  p.synthetic.concept_shift = cfg.opt.concept_shift;
  p.synthetic.quantity_skew = cfg.opt.quantity_skew;
  p.synthetic.noise = cfg.opt.noise;
  // Least squares is ridge regression only when l2 is given (its default 0.01
  // is logistic regression's lambda).
  p.synthetic.l2 = cfg.problem == task::ProblemKind::kLeastSquares && !cfg.opt.l2_set ? 0.0 : cfg.opt.l2;
  p.gmm.components = static_cast<uint32_t>(cfg.gmm.components);
  p.gmm.data_dim = static_cast<uint32_t>(cfg.gmm.data_dim);
  p.gmm.points = static_cast<uint32_t>(cfg.gmm.points);
  p.gmm.own_weight = cfg.gmm.own_weight;
  p.gmm.separation = cfg.gmm.separation;
  if (cfg.problem == task::ProblemKind::kGmm && cfg.data.own()) {  // the points are the devices': p from the shards
    p.gmm.components = static_cast<uint32_t>(cfg.data.components);
    p.gmm.data_dim = static_cast<uint32_t>(cfg.data.features > 0 ? cfg.data.features : 0);
    p.gmm.points = 0;
    p.gmm.own_weight = 0.0;
    p.gmm.separation = 0.0;
  }
  if (cfg.problem == task::ProblemKind::kGmm) p.dim = p.gmm.components * (1 + p.gmm.data_dim);

  std::vector<task::AlgorithmChoice> algs;
  for (const std::string& name : cfg.algorithms) {
    auto a = ParseAlgorithmChoice(name);
    if (!a.ok()) return a.status();
    algs.push_back(*a);
    if (cfg.opt.rr && !a->rr && task::FamilyOf(a->kind) == task::Family::kOpt) {
      const task::AlgorithmChoice w{a->kind, true};
      if (std::find(cfg.algorithms.begin(), cfg.algorithms.end(), task::AlgorithmName(w)) == cfg.algorithms.end())
        algs.push_back(w);
    }
  }
  if (algs.size() > task::kMaxAlgorithms)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} algorithms in one experiment; at most {} (run the others as another experiment)",
                              algs.size(), task::kMaxAlgorithms));
  t.num_algorithms = static_cast<uint32_t>(algs.size());
  for (size_t i = 0; i < algs.size(); ++i) t.algorithms[i] = algs[i];

  task::HyperSpec& h = t.hyper;
  h.step = cfg.step;
  h.local_steps = static_cast<uint32_t>(cfg.local_steps);
  h.comm_prob = cfg.effective_comm_prob();
  h.batch = static_cast<uint32_t>(cfg.problem == task::ProblemKind::kGmm ? cfg.gmm.batch : cfg.opt.batch);
  h.prox_mu = cfg.opt.prox_mu;
  h.server_step = cfg.opt.server_step;
  h.burn_in = static_cast<uint32_t>(cfg.opt.burn_in.value_or(cfg.rounds / 2));
  h.em_step = cfg.gmm.em_step;
  h.inner_iters = static_cast<uint32_t>(cfg.gmm.inner_iters);
  t.compression.quantizer = cfg.compression.quantizer;
  t.compression.control_variates = cfg.compression.control_variates;
  t.compression.downlink = cfg.compression.downlink;
  t.secagg.enabled = cfg.secagg.enabled;
  t.secagg.neighbours = cfg.secagg.neighbours;
  t.secagg.dropout = cfg.secagg.dropout;
  t.privacy.enabled = cfg.privacy.mechanism == "central" || cfg.privacy.mechanism == "distributed";
  t.privacy.distributed = cfg.privacy.mechanism == "distributed";
  if (t.privacy.distributed) {
    t.privacy.quorum_ppm = static_cast<uint32_t>(std::llround(cfg.privacy.quorum * 1e6));  // checked: (0, 1]
    t.privacy.device_variance = cfg.privacy.device_variance;
    t.privacy.has_test_seed = cfg.privacy.test_seed.has_value();
    t.privacy.test_seed = static_cast<uint32_t>(cfg.privacy.test_seed.value_or(0));  // its low 32 bits
  }
  t.privacy.clip = cfg.privacy.clip;
  t.privacy.noise_multiplier = cfg.privacy.noise_multiplier;
  t.participation = cfg.participation;
  t.seed = cfg.seed;
  t.rounds = static_cast<uint32_t>(cfg.rounds);
  t.runs = static_cast<uint32_t>(cfg.runs);
  return t;
}

problems::DataFiles DataFilesOf(const ExperimentConfig& cfg, bool at_coordinator) {
  problems::DataFiles files;
  files.bundle = cfg.problem_file;
  files.bundle_arrays = cfg.problem_arrays;
  files.csv = cfg.opt.data;
  files.generate = !at_coordinator || cfg.opt.coordinator_generates;
  if (cfg.data.own()) {
    files.shards.format = cfg.data.format == "records" ? data::ShardFormat::kRecords : data::ShardFormat::kCsv;
    files.shards.train = cfg.data.train;
    files.shards.label = cfg.data.label;
    files.shards.agents = static_cast<uint32_t>(cfg.garnet.agents);
    files.shards.memory = cfg.data.arrays;
    files.test = cfg.data.test;
    files.initial = cfg.data.user_init;
    files.read_shards = !at_coordinator || cfg.data.coordinator_reads_shards;
    files.skip_bad_shards = at_coordinator;  // a bad shard there refuses its device only (docs/data.md)
    files.features = static_cast<uint32_t>(cfg.data.features);
  }
  return files;
}

Result<std::unique_ptr<problems::Instance>> BuildInstance(const ExperimentConfig& cfg, bool at_coordinator) {
  auto task = MakeTask(cfg);
  if (!task.ok()) return task.status();
  const problems::DataFiles files = DataFilesOf(cfg, at_coordinator);
  auto inst = problems::Instance::Build(*task, files);
  if (!inst.ok()) {
    if (cfg.data.own() && !cfg.data.coordinator_reads_shards && files.read_shards)
      return Status(inst.status().code(),
                    fmt::format("the simulator trains every agent's shard, so it needs them all (data."
                                "coordinator_reads_shards = false spares only the coordinator): {}",
                                inst.status().message()));
    return inst.status();
  }
  if (cfg.agents_set && static_cast<uint32_t>(cfg.garnet.agents) != (*inst)->agents())
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("--agents {} does not match the {} agents in {}", cfg.garnet.agents, (*inst)->agents(),
                              !cfg.problem_file.empty() ? fmt::format("problem file '{}'", cfg.problem_file)
                                                        : fmt::format("'{}'", cfg.opt.data.empty() ? cfg.data.train : cfg.opt.data)));
  return inst;
}

}  // namespace fedrt::config
