// Federated TD(0) on the agents' own transitions (fedrt/problems/td_transitions.h,
// docs/data.md "TD(0) transitions"): every agent's shard read with the same
// reader as the supervised shards, its empirical expected operators for the
// evaluation (theta* and FedLSA's bias), and its sampling oracle.
#include <fmt/format.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/instance.h"
#include "fedrt/problems/td_transitions.h"

namespace fedrt::problems {

Status CheckTransitionColumns(const data::Shard& s) {
  if (s.dim % 2 != 0 || s.dim == 0)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: {} feature columns: TD(0) transitions need the features of s, then as many of s' "
                              "(named next_<name>)",
                              s.path, s.dim));
  const uint32_t p = s.dim / 2;
  for (uint32_t k = 0; k < p && s.features.size() == s.dim; ++k) {
    if (s.features[p + k] != "next_" + s.features[k])
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:1 (column '{}'): expected 'next_{}' (TD(0) transitions: the features of s, then "
                                "the same features of s' prefixed next_, in the same order)",
                                s.path, s.features[p + k], s.features[k]));
  }
  if (s.count() > kMaxTransitions)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: {} transitions; an agent holds at most {}", s.path, s.count(), kMaxTransitions));
  return Status::Ok();
}

namespace {

Result<data::Shard> ReadTransitions(const task::ProblemSpec& spec, const std::string& path) {
  auto s = data::ReadShard(static_cast<data::ShardFormat>(spec.data_format), path, spec.label, data::LabelKind::kReal);
  if (!s.ok()) return s.status();
  FEDRT_TRY(CheckTransitionColumns(*s));
  return s;
}

// Abar_c = (1/n) sum_i phi_i (phi_i - gamma phi'_i)^T, bbar_c = (1/n) sum_i r_i phi_i.
void EmpiricalOperators(const data::Shard& s, double gamma, MatrixRM& abar, Eigen::VectorXd& bbar) {
  const int p = static_cast<int>(s.dim / 2);
  abar = MatrixRM::Zero(p, p);
  bbar = Eigen::VectorXd::Zero(p);
  for (uint64_t i = 0; i < s.count(); ++i) {
    const Eigen::Map<const Eigen::VectorXd> phi(s.x.data() + i * s.dim, p), next(s.x.data() + i * s.dim + p, p);
    abar.noalias() += phi * (phi - gamma * next).transpose();
    bbar += s.y[i] * phi;
  }
  abar /= static_cast<double>(s.count());
  bbar /= static_cast<double>(s.count());
}

size_t OracleBytes(const data::Shard& s) {
  return sizeof(double) * s.count() * s.dim + s.count() * sizeof(TdTransition<double>) + 4 * Arena::kAlignment;
}

}  // namespace

Status Instance::build_td_transitions(const task::Task& task, const DataFiles& files) {
  const task::ProblemSpec& spec = task.problem;
  const ShardFiles& sf = files.shards;
  if (sf.agents == 0) return Status(StatusCode::kInvalidArgument, "no shards: the data has 0 agents");
  std::vector<data::Shard> shards;
  for (uint32_t c = 0; c < sf.agents; ++c) {
    auto s = ReadTransitions(spec, data::ShardPath(sf.train, c));
    if (!s.ok()) return s.status();
    if (!shards.empty() && s->dim != shards[0].dim)
      return Status(StatusCode::kInvalidArgument, fmt::format("{}: {} features, but the other shards have {}", s->path,
                                                              s->dim, shards[0].dim));
    shards.push_back(std::move(*s));
  }
  TdProblem td;
  td.dim = static_cast<int>(shards[0].dim / 2);
  td.gamma = spec.garnet.gamma;
  td.lsa.dim = td.dim;
  task::Fnv1a h;
  h.u64(static_cast<uint64_t>(shards[0].dim));
  size_t bytes = 0;
  for (const data::Shard& s : shards) {
    td.lsa.abar.emplace_back();
    td.lsa.bbar.emplace_back();
    EmpiricalOperators(s, td.gamma, td.lsa.abar.back(), td.lsa.bbar.back());
    h.u64(s.count());
    for (double v : s.x) h.f64(v);
    for (double v : s.y) h.f64(v);
    bytes += OracleBytes(s);
  }
  h.f64(td.gamma);
  FEDRT_TRY(td.lsa.solve());
  td.reward.resize(shards.size());  // agents(): one per shard (rewards live in the oracles)
  oracle_memory_.assign(bytes, 0);
  Arena arena(oracle_memory_.data(), oracle_memory_.size());
  td_oracles_.reserve(shards.size());
  for (size_t c = 0; c < shards.size(); ++c) {
    const data::Shard& s = shards[c];
    auto o = TdOracleFromTransitions<double>(arena, td.dim, static_cast<uint32_t>(s.count()), td.gamma, s.x.data(),
                                             s.y.data());
    if (!o.ok()) return Status(o.status().code(), fmt::format("{}: {}", s.path, o.status().message()));
    max_atoms_ = std::max<int>(max_atoms_, static_cast<int>(o->atoms()));
    td_oracles_.push_back(*o);
  }
  locals_.resize(shards.size());
  for (size_t c = 0; c < locals_.size(); ++c) locals_[c].td = &td_oracles_[c];
  problem_.data_fingerprint = h.value();
  problem_.agents = static_cast<uint32_t>(shards.size());
  problem_.dim = static_cast<uint32_t>(td.dim);
  const Eigen::VectorXd theta0 = td.lsa.theta_star + Eigen::VectorXd::Ones(td.dim);
  initial_.assign(theta0.data(), theta0.data() + td.dim);
  td_ = std::move(td);
  return Status::Ok();
}

Status Instance::build_own_transitions(const task::Task& task, uint32_t agent, const std::string& path) {
  const task::ProblemSpec& spec = task.problem;
  auto s = ReadTransitions(spec, path);
  if (!s.ok()) return s.status();
  if (s->dim != 2 * spec.dim)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: {} feature columns, but the task's TD(0) features have d = {} (2 d columns: s and s')",
                              path, s->dim, spec.dim));
  oracle_memory_.assign(OracleBytes(*s), 0);
  Arena arena(oracle_memory_.data(), oracle_memory_.size());
  auto o = TdOracleFromTransitions<double>(arena, static_cast<int>(spec.dim), static_cast<uint32_t>(s->count()),
                                           spec.garnet.gamma, s->x.data(), s->y.data());
  if (!o.ok()) return Status(o.status().code(), fmt::format("{}: {}", path, o.status().message()));
  td_oracles_.push_back(*o);
  max_atoms_ = static_cast<int>(o->atoms());
  locals_.resize(spec.agents);
  locals_[agent].td = &td_oracles_.back();
  return Status::Ok();
}

}  // namespace fedrt::problems
