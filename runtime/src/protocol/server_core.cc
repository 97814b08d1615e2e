#include "fedrt/protocol/server_core.h"

#include <cstring>

namespace fedrt::protocol {

using task::AlgorithmKind;
using task::Family;

Status ServerCore::init(const task::Task& task, uint32_t algorithm, uint32_t run, View<double> initial) {
  if (algorithm >= task.num_algorithms) return Status::InvalidArgument("server: no such algorithm in the task");
  choice_ = task.algorithms[algorithm];
  family_ = task::FamilyOf(choice_.kind);
  dim_ = static_cast<int>(task.problem.dim);
  chains_ = family_ == Family::kOpt && choice_.rr ? 2u : 1u;
  segment_dim_ = choice_.kind == AlgorithmKind::kScaffold ? 2 * dim_ : dim_;
  broadcast_dim_ = family_ == Family::kEm ? 2 * dim_ : static_cast<int>(chains_) * segment_dim_;
  if (static_cast<int>(initial.size) != dim_) return Status::InvalidArgument("server: initial iterate of the wrong size");
  if (task.privacy.enabled && (family_ != Family::kOpt || chains_ != 1 || choice_.kind == AlgorithmKind::kScaffold ||
                               choice_.kind == AlgorithmKind::kFedProxExact ||
                               (task.privacy.distributed ? !task.secagg.enabled || task.compression.control_variates
                                                         : task.compression.enabled())))
    return Status::InvalidArgument(
        "privacy: DP-FedAvg runs FedAvg and FedProx only, central without a quantizer, distributed under SecAgg+ "
        "without compression memories (docs/privacy.md)");
  const task::HyperSpec& h = task.hyper;
  // Only the family's servers, sized for the algorithm (exact sums: core/exact_sum_array.h).
  const auto opt_kind = static_cast<algorithms::FedOptAlgorithm>(
      family_ == Family::kOpt ? static_cast<unsigned>(choice_.kind) - static_cast<unsigned>(AlgorithmKind::kFedAvg) : 0u);
  const size_t family_bytes =
      family_ == Family::kLsa   ? algorithms::LsaServer<double>::ArenaBytes(dim_)
      : family_ == Family::kEm  ? EmServer::ArenaBytes(dim_)
                                : chains_ * algorithms::FedOptServer<double>::ArenaBytes(dim_, opt_kind) +
                                      (chains_ == 2 ? algorithms::RichardsonRomberg<double>::ArenaBytes(dim_) : 0);
  memory_.reset(static_cast<uint8_t*>(std::calloc(family_bytes + 256, 1)));
  if (!memory_) return Status::ResourceExhausted("server: out of memory for the server state");
  Arena arena(memory_.get(), family_bytes + 256, /*zeroed=*/true);
  copy_.clear();
  if (family_ == Family::kEm || chains_ == 2) copy_.assign(static_cast<size_t>(broadcast_dim_), 0.0);
  switch (family_) {
    case Family::kLsa: {
      algorithms::LsaHyper<double> hy;
      hy.algorithm = static_cast<algorithms::LsaAlgorithm>(choice_.kind);
      hy.step_size = h.step;
      hy.local_steps = h.local_steps;
      hy.comm_prob = h.comm_prob;
      auto s = algorithms::LsaServer<double>::create(arena, dim_, hy, initial.data, task.seed, run);
      if (!s.ok()) return s.status();
      lsa_ = *s;
      break;
    }
    case Family::kOpt: {
      for (uint32_t k = 0; k < chains_; ++k) {
        algorithms::FedOptHyper<double> hy;
        hy.algorithm = static_cast<algorithms::FedOptAlgorithm>(static_cast<unsigned>(choice_.kind) -
                                                                static_cast<unsigned>(AlgorithmKind::kFedAvg));
        hy.step_size = h.step * (k == 0 ? 1.0 : 2.0);
        hy.local_steps = h.local_steps;
        hy.batch = h.batch;
        hy.prox_mu = h.prox_mu;
        hy.server_step = h.server_step;
        if (task.privacy.enabled)  // DP-FedAvg's fixed denominator q N (docs/privacy.md)
          hy.fixed_denominator = task.participation * static_cast<double>(task.problem.agents);
        auto s = algorithms::FedOptServer<double>::create(arena, dim_, hy, initial.data, task.problem.agents);
        if (!s.ok()) return s.status();
        opt_[k] = *s;
      }
      if (chains_ == 2) {
        auto r = algorithms::RichardsonRomberg<double>::create(arena, dim_, h.burn_in);
        if (!r.ok()) return r.status();
        rr_ = *r;
      }
      break;
    }
    case Family::kEm: {
      algorithms::EmHyper<double> hy;
      hy.algorithm = static_cast<algorithms::EmAlgorithm>(static_cast<unsigned>(choice_.kind) -
                                                          static_cast<unsigned>(AlgorithmKind::kFedEm));
      hy.step = h.em_step;
      hy.participation = task.participation;
      hy.batch = h.batch;
      hy.inner_iters = h.inner_iters;
      hy.quantizer = task.compression.quantizer;
      const int G = static_cast<int>(task.problem.gmm.components), p = static_cast<int>(task.problem.gmm.data_dim);
      gmm_components_ = G;
      gmm_dim_ = p;
      if (dim_ != G * (1 + p)) return Status::InvalidArgument("fedem server: dim must be G (1 + p)");
      auto s = EmServer::create(arena, dim_, problems::GmmMStepOf<double>{G, p}, task.problem.agents, hy, initial.data);
      if (!s.ok()) return s.status();
      em_ = *s;
      break;
    }
  }
  refresh_broadcast();
  return Status::Ok();
}

Reconstruction ServerCore::reconstruction(bool quantized) const {
  if (family_ == Family::kEm) return Reconstruction::kMessage;
  return quantized ? Reconstruction::kStartPlusCoded : Reconstruction::kValue;
}

bool ServerCore::has_initial_exchange() const {
  return family_ == Family::kEm && choice_.kind != AlgorithmKind::kFedEmNaive;
}

bool ServerCore::informs_all() const { return choice_.kind == AlgorithmKind::kVrFedEm; }

uint32_t ServerCore::start_round(uint32_t t) {
  uint32_t steps = 0;
  switch (family_) {
    case Family::kLsa: steps = lsa_.start_round(t).local_steps; break;
    case Family::kOpt:
      for (uint32_t k = 0; k < chains_; ++k) steps = opt_[k].start_round(t).local_steps;
      break;
    case Family::kEm: em_.start_round(); break;
  }
  refresh_broadcast();
  return steps;
}

// The broadcast is the server's own vector where it is one (LSA theta_t, a
// single chain's x_t (and c)); a copy where it joins two (EM, Fed-RR).
void ServerCore::refresh_broadcast() {
  switch (family_) {
    case Family::kLsa: broadcast_ = lsa_.global(); break;
    case Family::kOpt:
      if (chains_ == 1) {
        broadcast_ = opt_[0].broadcast();
        break;
      }
      for (uint32_t k = 0; k < chains_; ++k)
        std::memcpy(copy_.data() + k * segment_dim_, opt_[k].broadcast(), sizeof(double) * segment_dim_);
      broadcast_ = copy_.data();
      break;
    case Family::kEm:
      std::memcpy(copy_.data(), em_.statistic(), sizeof(double) * dim_);
      std::memcpy(copy_.data() + dim_, em_.params(), sizeof(double) * dim_);
      broadcast_ = copy_.data();
      break;
  }
}

void ServerCore::complete_broadcast(double* b) const {
  if (family_ == Family::kEm) problems::GmmMStep(b, gmm_components_, gmm_dim_, b + dim_);
}

const double* ServerCore::start(uint32_t /*k*/, const double* announced) const {
  return family_ == Family::kOpt ? nullptr : announced;  // LSA: theta_t; EM: Shat_k (the first half)
}

void ServerCore::add(uint32_t k, const double* value) {
  switch (family_) {
    case Family::kLsa: lsa_.accumulate(value); break;
    case Family::kOpt:
      if (stale_weights_) opt_[k].accumulate_stale(value, stale_weight_);
      else opt_[k].accumulate(value);
      break;
    case Family::kEm: em_.accumulate(value); break;
  }
}

void ServerCore::add_part(uint32_t k, int first, int n, const double* values, bool negate) {
  switch (family_) {
    case Family::kLsa: lsa_.accumulate_part(first, n, values, negate); break;
    case Family::kOpt: opt_[k].accumulate_part(first, n, values, negate); break;
    case Family::kEm: break;  // EM updates are messages, never chunk-aggregated raw values
  }
}

void ServerCore::count(uint32_t k) {
  switch (family_) {
    case Family::kLsa: lsa_.count_report(); break;
    case Family::kOpt: opt_[k].count_report(); break;
    case Family::kEm: break;
  }
}

void ServerCore::add_mean(uint32_t k, const double* mean, uint32_t m) {
  switch (family_) {
    case Family::kLsa: lsa_.accumulate(mean, static_cast<double>(m)); break;
    case Family::kOpt: opt_[k].accumulate(mean, static_cast<double>(m), m); break;
    case Family::kEm: break;  // FedEM aggregates sums (add_message_sum)
  }
}

void ServerCore::add_message_sum(const double* sum) {
  if (family_ == Family::kEm) em_.receive_sum(sum);
}

void ServerCore::add_initial(const double* v0c) {
  if (family_ == Family::kEm) em_.add_initial_control_variate(v0c);
}

void ServerCore::round_sums(bool initial, std::vector<ExactSumArray*>& out) {
  out.clear();
  switch (family_) {
    case Family::kLsa:
      if (!initial) out.push_back(&lsa_.round_sum());
      break;
    case Family::kOpt:
      for (uint32_t k = 0; k < chains_ && !initial; ++k) out.push_back(&opt_[k].round_sum());
      break;
    case Family::kEm: out.push_back(initial ? &em_.initial_sum() : &em_.round_sum()); break;
  }
}
void ServerCore::count_merged(uint32_t k, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) count(k);
}
void ServerCore::refresh_initial() {
  if (family_ == Family::kEm) em_.refresh_initial();
}
void ServerCore::add_noise(uint32_t k, const double* noise) {
  if (family_ == Family::kOpt) opt_[k].add_noise(noise);
}

void ServerCore::add_sum(uint32_t k, const double* sum, uint32_t m) {
  if (family_ != Family::kOpt) return;
  opt_[k].add_noise(sum);  // adds to the exact sum of dx as it is
  for (uint32_t i = 0; i < m; ++i) opt_[k].count_report();
}

void ServerCore::finish_round(uint32_t t) {
  switch (family_) {
    case Family::kLsa: lsa_.finish_round(); break;
    case Family::kOpt:
      for (uint32_t k = 0; k < chains_; ++k) opt_[k].finish_round();
      if (chains_ == 2) rr_.observe(t + 1, opt_[0].global(), opt_[1].global());
      break;
    case Family::kEm: em_.finish_round(); break;
  }
  refresh_broadcast();
}

const double* ServerCore::model() const {
  switch (family_) {
    case Family::kLsa: return lsa_.global();
    case Family::kOpt: return chains_ == 2 ? rr_.output() : opt_[0].global();
    case Family::kEm: return em_.params();
  }
  return nullptr;
}

const double* ServerCore::statistic() const { return family_ == Family::kEm ? em_.statistic() : nullptr; }

// Layout: LSA theta; optimisation each chain's broadcast (x_t, Scaffold's c),
// then Fed-RR's count and averages and x_RR; EM Shat_k then V_k.
void ServerCore::state_slices(std::vector<StateSlice>& out) const {
  out.clear();
  const size_t d = static_cast<size_t>(dim_);
  switch (family_) {
    case Family::kLsa: out.push_back({lsa_.global(), d}); break;
    case Family::kOpt:
      for (uint32_t k = 0; k < chains_; ++k) out.push_back({opt_[k].broadcast(), static_cast<size_t>(segment_dim_)});
      if (chains_ == 2) {
        averaged_ = static_cast<double>(rr_.averaged());
        out.push_back({&averaged_, 1});
        out.push_back({rr_.average_gamma(), d});
        out.push_back({rr_.average_2gamma(), d});
        out.push_back({rr_.output(), d});
      }
      break;
    case Family::kEm:
      out.push_back({em_.statistic(), d});
      out.push_back({em_.control_variate(), d});
      break;
  }
}

void ServerCore::import_targets(std::vector<StateTarget>& out) {
  out.clear();
  const size_t d = static_cast<size_t>(dim_);
  switch (family_) {
    case Family::kLsa: out.push_back({lsa_.mutable_global(), d}); break;
    case Family::kOpt:
      for (uint32_t k = 0; k < chains_; ++k)
        out.push_back({opt_[k].mutable_broadcast(), static_cast<size_t>(segment_dim_)});
      if (chains_ == 2) {
        staging_.assign(1 + 3 * d, 0.0);
        out.push_back({staging_.data(), staging_.size()});
      }
      break;
    case Family::kEm:
      staging_.assign(2 * d, 0.0);
      out.push_back({staging_.data(), staging_.size()});
      break;
  }
}

Status ServerCore::finish_import() {
  const size_t d = static_cast<size_t>(dim_);
  if (family_ == Family::kOpt && chains_ == 2) {
    const double count = staging_[0];
    if (!(count >= 0.0 && count <= 4294967295.0 && count == static_cast<double>(static_cast<uint32_t>(count))))
      return Status::DataLoss("server state: Fed-RR's averaged count is not a count");
    rr_.restore(static_cast<uint32_t>(count), staging_.data() + 1, staging_.data() + 1 + d, staging_.data() + 1 + 2 * d);
  } else if (family_ == Family::kEm) {
    em_.restore(staging_.data(), staging_.data() + d);
  }
  staging_.clear();
  staging_.shrink_to_fit();
  refresh_broadcast();
  return Status::Ok();
}

}  // namespace fedrt::protocol
