#include "fedrt/problems/instance.h"

#include <fmt/format.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/array_bundle.h"
#include "fedrt/problems/garnet.h"
#include "fedrt/problems/td_oracles.h"

namespace fedrt::problems {

namespace {

// FNV-1a over the numbers of a problem read from files (not their formatting).
void HashMatrix(task::Fnv1a& h, const double* v, size_t n) {
  h.u64(n);
  for (size_t i = 0; i < n; ++i) h.f64(v[i]);
}

}  // namespace

Status CheckFedProxExact(const task::Task& task, int dim) {
  if (task.problem.kind != task::ProblemKind::kLeastSquares || dim <= kDenseLeastSquaresMaxDim) return Status::Ok();
  for (uint32_t a = 0; a < task.num_algorithms; ++a)
    if (task.algorithms[a].kind == task::AlgorithmKind::kFedProxExact)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("fedprox-exact solves a d x d system per agent and round; d = {} is above {} (the "
                                "largest d whose Abar_c is kept): use fedprox (local gradient steps)",
                                dim, kDenseLeastSquaresMaxDim));
  return Status::Ok();
}

Result<std::unique_ptr<Instance>> Instance::Build(const task::Task& task, const DataFiles& files) {
  auto inst = std::unique_ptr<Instance>(new Instance());
  inst->problem_ = task.problem;
  switch (task::FamilyOf(task.problem.kind)) {
    case task::Family::kLsa:
      if (task.problem.own_data && !files.read_shards)
        return Status::InvalidArgument("td0 needs its shards where the global model is evaluated: its initial iterate "
                                       "theta* + (1, ..., 1) depends on every agent's transitions");
      FEDRT_TRY(inst->build_td(task, files));
      break;
    case task::Family::kOpt:
      if (task.problem.kind == task::ProblemKind::kUser) FEDRT_TRY(inst->build_user(task, files));
      else if (task.problem.own_data ? !files.read_shards : !task.problem.from_files && !files.generate)
        FEDRT_TRY(inst->build_blind(task, files));
      else FEDRT_TRY(inst->build_fed(task, files));
      break;
    case task::Family::kEm:
      if (task.problem.own_data) FEDRT_TRY(inst->build_gmm_shards(task, files));
      else FEDRT_TRY(inst->build_gmm(task));
      break;
  }
  return inst;
}

problems::LocalProblem<double> Instance::local(uint32_t agent) const { return locals_.at(agent); }

void Instance::drop_agents() {
  if (!td_) return;
  // swap with empty containers: clear() would keep the capacity.
  std::vector<Eigen::VectorXd>().swap(td_->reward);
  std::vector<Eigen::VectorXd>().swap(td_->mu);
  std::vector<std::vector<double>>().swap(td_->kernel);
  std::vector<MatrixRM>().swap(td_->lsa.abar);
  std::vector<Eigen::VectorXd>().swap(td_->lsa.bbar);
  std::vector<Eigen::VectorXd>().swap(td_->lsa.theta_c);
  std::vector<double>().swap(td_->sigma_a);
  std::vector<double>().swap(td_->sigma_b);
  std::vector<problems::LocalProblem<double>>().swap(locals_);
  std::vector<TdOracle<double>>().swap(td_oracles_);
  std::vector<ExpectedLsaOracle<double>>().swap(expected_oracles_);
  std::vector<uint8_t>().swap(oracle_memory_);
}

Status Instance::build_td(const task::Task& task, const DataFiles& files) {
  const task::ProblemSpec& spec = task.problem;
  if (spec.own_data) return build_td_transitions(task, files);
  if (spec.kind == task::ProblemKind::kBundle) {
    std::optional<Result<ArrayBundle>> loaded;
    if (!files.bundle_arrays) {
      loaded.emplace(ArrayBundle::load(files.bundle));
      if (!loaded->ok()) return loaded->status();
    }
    auto p = TdProblem::from_bundle(files.bundle_arrays ? *files.bundle_arrays : **loaded);
    if (!p.ok()) return p.status();
    td_ = std::move(*p);
    task::Fnv1a h;
    if (td_->linear_system()) {
      for (int c = 0; c < td_->agents(); ++c) {
        HashMatrix(h, td_->lsa.abar[c].data(), static_cast<size_t>(td_->lsa.abar[c].size()));
        HashMatrix(h, td_->lsa.bbar[c].data(), static_cast<size_t>(td_->lsa.bbar[c].size()));
      }
      HashMatrix(h, td_->sigma_a.data(), td_->sigma_a.size());
      HashMatrix(h, td_->sigma_b.data(), td_->sigma_b.size());
    } else {
      HashMatrix(h, td_->phi.data(), static_cast<size_t>(td_->phi.size()));
      HashMatrix(h, td_->policy.data(), static_cast<size_t>(td_->policy.size()));
      for (const auto& r : td_->reward) HashMatrix(h, r.data(), static_cast<size_t>(r.size()));
      for (const auto& k : td_->kernel) HashMatrix(h, k.data(), k.size());
      h.f64(td_->gamma);
    }
    problem_.from_files = true;
    problem_.data_fingerprint = h.value();
    problem_.agents = static_cast<uint32_t>(td_->agents());
    problem_.dim = static_cast<uint32_t>(td_->dim);
  } else {
    GarnetConfig g;
    g.agents = static_cast<int>(spec.agents);
    g.n_states = static_cast<int>(spec.garnet.states);
    g.n_actions = static_cast<int>(spec.garnet.actions);
    g.branching = static_cast<int>(spec.garnet.branching);
    g.dim = static_cast<int>(spec.dim);
    g.gamma = spec.garnet.gamma;
    g.epsilon = spec.garnet.epsilon;
    g.heterogeneity = spec.garnet.heterogeneity == task::Heterogeneity::kHigh ? Heterogeneity::kHigh : Heterogeneity::kLow;
    g.seed = spec.seed;
    auto p = GenerateGarnet(g);
    if (!p.ok()) return p.status();
    td_ = std::move(*p);
  }
  const TdProblem& p = *td_;
  const size_t d = static_cast<size_t>(p.dim);
  // A linear system's oracle is the expected operator with its noise levels.
  const bool expected = spec.garnet.noise_free || p.linear_system();
  if (expected) {
    const size_t bytes = (sizeof(double) * (d * d + 2 * d) + 4 * Arena::kAlignment) * static_cast<size_t>(p.agents());
    oracle_memory_.assign(bytes, 0);
    Arena arena(oracle_memory_.data(), oracle_memory_.size());
    const bool noise = p.linear_system() && !spec.garnet.noise_free;
    for (int c = 0; c < p.agents(); ++c) {
      const size_t k = static_cast<size_t>(c);
      auto o = ExpectedLsaOracle<double>::create(arena, p.dim, p.lsa.abar[c].data(), p.lsa.bbar[c].data(),
                                                 noise ? p.sigma_a[k] : 0.0, noise ? p.sigma_b[k] : 0.0);
      if (!o.ok()) return o.status();
      expected_oracles_.push_back(*o);
    }
  } else {
    // TD(0): the agents share the feature map (p.phi); each keeps only its
    // alias table, exactly sized, built on the machine's threads.
    TdOracleTables tables;
    FEDRT_TRY(BuildTdOracles(p, 0, tables));
    oracle_memory_ = std::move(tables.memory);  // the same buffer: the oracles point into it
    td_oracles_ = std::move(tables.oracles);
    max_atoms_ = tables.max_atoms;
  }
  locals_.resize(static_cast<size_t>(p.agents()));
  for (size_t c = 0; c < locals_.size(); ++c) {
    if (expected) locals_[c].expected = &expected_oracles_[c];
    else locals_[c].td = &td_oracles_[c];
  }
  const Eigen::VectorXd theta0 = p.lsa.theta_star + Eigen::VectorXd::Ones(p.dim);
  initial_.assign(theta0.data(), theta0.data() + p.dim);
  return Status::Ok();
}

namespace {

FedLoss LossOf(task::ProblemKind kind) {
  if (kind == task::ProblemKind::kLeastSquares) return FedLoss::kLeastSquares;
  return kind == task::ProblemKind::kSoftmax ? FedLoss::kSoftmax : FedLoss::kLogistic;
}

}  // namespace

Status Instance::build_fed(const task::Task& task, const DataFiles& files) {
  const task::ProblemSpec& spec = task.problem;
  const FedLoss loss = LossOf(spec.kind);
  if (loss == FedLoss::kSoftmax && files.shards.agents == 0)
    return Status::InvalidArgument("softmax regression trains on shard files ([data] format = \"csv\" or \"records\")");
  if (spec.from_files) {
    ShardFiles shards = files.shards;
    shards.classes = spec.classes;
    shards.intercept = spec.intercept;
    auto data = files.shards.agents > 0 ? LoadFedShards(loss, shards, files.skip_bad_shards ? &skipped_ : nullptr)
                                        : LoadFedDataCsv(loss, files.csv);
    if (!data.ok()) return data.status();
    fed_ = std::move(*data);
    if (files.features != 0 && static_cast<uint32_t>(fed_->dim) != files.features)
      return Status(StatusCode::kInvalidArgument, fmt::format("model.features = {}, but the shards '{}' have {} features",
                                                              files.features, files.shards.train, fed_->dim));
    task::Fnv1a h;
    h.u64(static_cast<uint64_t>(fed_->dim));
    for (int c = 0; c < fed_->agents(); ++c) {
      HashMatrix(h, fed_->x[c].data(), static_cast<size_t>(fed_->x[c].size()));
      HashMatrix(h, fed_->y[c].data(), static_cast<size_t>(fed_->y[c].size()));
    }
    problem_.data_fingerprint = h.value();
    problem_.agents = static_cast<uint32_t>(fed_->agents() + skipped_.size());  // a left-out agent keeps its index
    problem_.dim = static_cast<uint32_t>(fed_->model_dim());
  } else {
    FedDataConfig g;
    g.agents = static_cast<int>(spec.agents);
    g.dim = static_cast<int>(spec.dim);
    g.samples = spec.synthetic.samples;
    g.covariate_shift = spec.synthetic.covariate_shift;
    g.concept_shift = spec.synthetic.concept_shift;
    g.quantity_skew = spec.synthetic.quantity_skew;
    g.noise = spec.synthetic.noise;
    g.seed = spec.seed;
    g.only_agent = files.only_agent < static_cast<int>(spec.agents) ? files.only_agent : -1;
    auto data = GenerateFedData(loss, g);
    if (!data.ok()) return data.status();
    fed_ = std::move(*data);
    if (g.only_agent >= 0) return build_fed_oracles(task, g.only_agent, g.only_agent + 1);
  }
  return build_fed_oracles(task, 0, fed_->agents());
}

// Oracles of agents [first, last) of fed_ (the others stay empty).
Status Instance::build_fed_oracles(const task::Task& task, int first, int last) {
  const task::ProblemSpec& spec = task.problem;
  const FedLoss loss = LossOf(spec.kind);
  const FedDataset& data = *fed_;
  const size_t p = static_cast<size_t>(data.dim);
  // Least squares keeps Abar_c (and the prox factor) up to d = 2048, and is
  // matrix-free above (fedrt/problems/least_squares.h): then no exact prox.
  const bool dense = data.dim <= kDenseLeastSquaresMaxDim;
  FEDRT_TRY(CheckFedProxExact(task, data.dim));
  const size_t per_agent = loss == FedLoss::kLeastSquares ? (dense ? sizeof(double) * (2 * p * p + p) : 0)
                           : loss == FedLoss::kSoftmax    ? sizeof(double) * spec.classes
                                                          : 0;
  oracle_memory_.assign(static_cast<size_t>(last - first) * (per_agent + 4 * Arena::kAlignment) + 4096, 0);
  Arena arena(oracle_memory_.data(), oracle_memory_.size());
  lsq_oracles_.reserve(static_cast<size_t>(last - first));
  logistic_oracles_.reserve(static_cast<size_t>(last - first));
  softmax_oracles_.reserve(static_cast<size_t>(last - first));
  locals_.resize(static_cast<size_t>(data.agents()));
  for (int c = first; c < last; ++c) {
    const uint32_t nc = static_cast<uint32_t>(data.x[c].rows());
    if (loss == FedLoss::kSoftmax) {
      auto o = SoftmaxOracle<double>::create(arena, data.dim, spec.classes, spec.intercept, nc, data.x[c].data(),
                                             data.y[c].data(), spec.synthetic.l2);
      if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
      softmax_oracles_.push_back(*o);
      locals_[static_cast<size_t>(c)].softmax = &softmax_oracles_.back();
    } else if (loss == FedLoss::kLeastSquares) {
      auto o = dense ? LeastSquaresOracle<double>::create(arena, data.dim, nc, data.x[c].data(), data.y[c].data(),
                                                          task.hyper.prox_mu, spec.synthetic.l2)
                     : LeastSquaresOracle<double>::CreateMatrixFree(data.dim, nc, data.x[c].data(), data.y[c].data(),
                                                                    spec.synthetic.l2, false);
      if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
      lsq_oracles_.push_back(*o);
      locals_[static_cast<size_t>(c)].least_squares = &lsq_oracles_.back();
    } else {
      auto o = LogisticOracle<double>::create(arena, data.dim, nc, data.x[c].data(), data.y[c].data(), spec.synthetic.l2);
      if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
      logistic_oracles_.push_back(*o);
      locals_[static_cast<size_t>(c)].logistic = &logistic_oracles_.back();
    }
  }
  initial_.assign(static_cast<size_t>(data.model_dim()), 0.0);
  return Status::Ok();
}

Result<std::unique_ptr<Instance>> Instance::BuildOwn(const task::Task& task, uint32_t agent, const std::string& shard) {
  const task::ProblemSpec& spec = task.problem;
  if (!spec.own_data) return Status::InvalidArgument("BuildOwn: the task is not an own-data task");
  if (spec.kind == task::ProblemKind::kUser) return Status::InvalidArgument("BuildOwn: a user model needs BuildOwnUser");
  if (agent >= spec.agents) return Status::InvalidArgument("BuildOwn: agent index outside the task's agents");
  if (task::FamilyOf(spec.kind) == task::Family::kLsa) {
    std::unique_ptr<Instance> inst(new Instance());
    inst->problem_ = spec;
    FEDRT_TRY(inst->build_own_transitions(task, agent, shard));
    return inst;
  }
  const data::LabelKind label = task::FamilyOf(spec.kind) == task::Family::kEm ? data::LabelKind::kNone
                                                                                   : LabelKindOf(LossOf(spec.kind));
  auto s = data::ReadShard(static_cast<data::ShardFormat>(spec.data_format), shard, spec.label, label, spec.classes);
  if (!s.ok()) return s.status();
  return BuildOwn(task, agent, *s);
}

Result<std::unique_ptr<Instance>> Instance::BuildOwn(const task::Task& task, uint32_t agent, const data::Shard& s) {
  const task::ProblemSpec& spec = task.problem;
  if (spec.own_data && task::FamilyOf(spec.kind) == task::Family::kEm && agent < spec.agents) {
    std::unique_ptr<Instance> inst(new Instance());
    inst->problem_ = spec;
    FEDRT_TRY(inst->build_own_gmm(task, agent, s));
    return inst;
  }
  if (!spec.own_data || task::FamilyOf(spec.kind) != task::Family::kOpt)
    return Status::InvalidArgument("BuildOwn: the task is not an own-data least squares / logistic / softmax / gmm task");
  if (spec.kind == task::ProblemKind::kUser) return Status::InvalidArgument("BuildOwn: a user model needs BuildOwnUser");
  if (agent >= spec.agents) return Status::InvalidArgument("BuildOwn: agent index outside the task's agents");
  const FedLoss loss = LossOf(spec.kind);
  FedDataset fed;
  fed.loss = loss;
  fed.classes = static_cast<int>(spec.classes);
  fed.intercept = spec.intercept;
  fed.dim = static_cast<int>(s.dim) + fed.ones_column();
  if (fed.model_dim() != static_cast<int>(spec.dim))
    return Status(StatusCode::kInvalidArgument,
                  loss == FedLoss::kSoftmax
                      ? fmt::format("{}: {} features give d = {} x ({} + {}) = {}, but the task's model has d = {}", s.path,
                                    s.dim, spec.classes, s.dim, spec.intercept ? 1 : 0, fed.model_dim(), spec.dim)
                      : fmt::format("{}: {} features{}, but the task's model has d = {}", s.path, s.dim,
                                    spec.intercept ? " and the intercept" : "", spec.dim));
  std::unique_ptr<Instance> inst(new Instance());
  inst->problem_ = spec;
  fed.source = s.path;
  fed.x.resize(spec.agents);
  fed.y.resize(spec.agents);
  FedDataset own;
  own.loss = loss;
  own.intercept = fed.intercept;
  own.dim = fed.dim;
  FEDRT_TRY(AppendShard(own, s));
  fed.x[agent] = std::move(own.x[0]);
  fed.y[agent] = std::move(own.y[0]);
  inst->fed_ = std::move(fed);
  FEDRT_TRY(inst->build_fed_oracles(task, static_cast<int>(agent), static_cast<int>(agent) + 1));
  return inst;
}

// The coordinator's side of a user model: no data and no oracles (it has no
// code for the model), the agents and the initial iterate x_0.
Status Instance::build_user(const task::Task& task, const DataFiles& files) {
  const size_t d = task.problem.dim;
  if (!files.initial.empty() && files.initial.size() != d)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("user model: init has {} numbers, the model has d = {}", files.initial.size(), d));
  locals_.resize(task.problem.agents);
  initial_ = files.initial.empty() ? std::vector<double>(d, 0.0) : files.initial;
  return Status::Ok();
}

Result<std::unique_ptr<Instance>> Instance::BuildOwnUser(const task::Task& task, uint32_t agent, data::Shard shard,
                                                         const UserModel& model) {
  const task::ProblemSpec& spec = task.problem;
  if (!spec.own_data || spec.kind != task::ProblemKind::kUser)
    return Status::InvalidArgument("BuildOwnUser: the task does not train a user model on own data");
  if (agent >= spec.agents) return Status::InvalidArgument("BuildOwnUser: agent index outside the task's agents");
  if (model.dim != spec.dim)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("the user model has {} parameters, the task's model.dim is {}", model.dim, spec.dim));
  if (model.function() == nullptr) return Status::InvalidArgument("the user model has no loss-and-gradient function");
  if (model.features != 0 && model.features != shard.dim)
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: {} features, but the user model reads {}", shard.path,
                                                            shard.dim, model.features));
  std::unique_ptr<Instance> inst(new Instance());
  inst->problem_ = spec;
  inst->user_shard_ = std::move(shard);
  const data::Shard& s = *inst->user_shard_;
  const uint32_t batch = task.hyper.batch;
  inst->oracle_memory_.assign(UserModelOracle<double>::ArenaBytes(static_cast<int>(spec.dim), s.dim, batch) + 64, 0);
  Arena arena(inst->oracle_memory_.data(), inst->oracle_memory_.size());
  auto o = UserModelOracle<double>::create(arena, static_cast<int>(spec.dim), s.dim, static_cast<uint32_t>(s.count()),
                                           s.x.data(), s.y.data(), batch, model.function(), model.context());
  if (!o.ok()) return o.status();
  inst->user_oracles_.push_back(*o);
  inst->locals_.resize(spec.agents);
  inst->locals_[agent].user = &inst->user_oracles_.back();
  inst->initial_.assign(spec.dim, 0.0);
  return inst;
}

Status Instance::build_gmm(const task::Task& task) {
  auto data = GenerateGmm(task.problem);
  if (!data.ok()) return data.status();
  gmm_ = std::move(*data);
  const GmmData& g = *gmm_;
  for (uint32_t c = 0; c < g.n; ++c) {
    auto o = GmmOracle<double>::create(g.points[c].data(), g.counts[c], g.G, g.p);
    if (!o.ok()) return o.status();
    gmm_oracles_.push_back(*o);
  }
  locals_.resize(g.n);
  for (uint32_t c = 0; c < g.n; ++c) locals_[c].gmm = &gmm_oracles_[c];
  initial_ = GmmInitialStatistic(g);
  return Status::Ok();
}

}  // namespace fedrt::problems
