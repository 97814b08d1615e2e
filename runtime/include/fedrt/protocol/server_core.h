#pragma once
// ServerCore: the server cores of one algorithm of a task behind one
// interface (docs/architecture.md, "Families"): the round's plan and
// broadcast, the streaming aggregation of the devices' values, the server
// rule, the reported iterate and the state a coordinator persists. The
// layouts are those of protocol/client_work.h. Host code (double).

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "fedrt/algorithms/fedem.h"
#include "fedrt/algorithms/fedopt.h"
#include "fedrt/algorithms/lsa.h"
#include "fedrt/algorithms/richardson_romberg.h"
#include "fedrt/task/task.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/protocol/messages.h"

namespace fedrt::protocol {

// A piece of the persisted server state: the core's own memory, no copy.
struct StateSlice {
  const double* data = nullptr;
  size_t size = 0;
};
struct StateTarget {
  double* data = nullptr;
  size_t size = 0;
};

// How the server turns one segment of an update into the value it aggregates.
enum class Reconstruction : uint8_t {
  kValue,         // raw float64 values, aggregated as sent (LSA, optimisation without a quantizer)
  kStartPlusCoded,  // start + V_c + m (LSA, optimisation with a quantizer; V_c = 0 without memory)
  kMessage,       // the message m itself (FedEM: the server keeps V from sums)
};

class ServerCore {
 public:
  // `initial`: LSA theta_0 (d), optimisation x_0 (d), EM Shat_0 (G (1 + p)).
  Status init(const task::Task& task, uint32_t algorithm, uint32_t run, View<double> initial);

  task::Family family() const { return family_; }
  uint32_t chains() const { return chains_; }
  int dim() const { return dim_; }
  int segment_dim() const { return segment_dim_; }
  int broadcast_dim() const { return broadcast_dim_; }
  Reconstruction reconstruction(bool quantized) const;
  bool has_initial_exchange() const;  // FedEM, VR-FedEM: V_{0,c} before round 0
  bool informs_all() const;           // VR-FedEM: every agent keeps its estimate current
  bool result_needs_model() const { return family_ == task::Family::kLsa; }

  // Round t: returns its local steps (H, or SCAFFLSA-H1's geometric block).
  uint32_t start_round(uint32_t t);
  const double* broadcast() const { return broadcast_; }
  // What a broadcast holds besides its segments, from them (EM: the second
  // half T(first half), the M-step; other families: nothing to do).
  void complete_broadcast(double* b) const;
  // What segment k of an update is coded relative to, given the broadcast the
  // devices received (null: zero): LSA theta_t, EM Shat_k, optimisation zero.
  const double* start(uint32_t k, const double* announced) const;

  // Aggregation: one device's value of segment k; the mean of m devices'
  // values (the integer uplink); FedEM's sum of m messages; V_{0,c}.
  void add(uint32_t k, const double* value);
  void add_mean(uint32_t k, const double* mean, uint32_t m);
  void add_message_sum(const double* sum);
  void add_initial(const double* v0c);
  // A chunked raw update (Reconstruction::kValue): entries [first, first + n)
  // of segment k's value as they arrive, or taken back (negate); then
  // count(k) once the segment is whole. add(k, v) is both at once.
  void add_part(uint32_t k, int first, int n, const double* values, bool negate);
  // Buffered asynchronous aggregation (optimisation family, docs/async.md):
  // once set, add() weighs the dx of the next updates by w = (1 + s)^-a
  // (FedOptServer::accumulate_stale); set before each update.
  // DP-FedAvg under buffered asynchronous rounds: the step divides by K, not q N.
  void set_fixed_denominator(double d) {
    for (uint32_t k = 0; k < chains_; ++k) opt_[k].set_fixed_denominator(d);
  }
  void set_staleness_weight(double w) {
    stale_weights_ = true;
    stale_weight_ = w;
  }
  void count(uint32_t k);
  // Partial aggregation (docs/gateways.md): the round's exact sums in a fixed
  // order: LSA sum_c theta_{t,H}^c; optimisation each chain's sum_c of its
  // updates; EM sum_c m_c, or in the initial exchange sum_c V_{0,c} / N.
  void round_sums(bool initial, std::vector<ExactSumArray*>& out);
  // After sums of n updates were added to chain k's: count them (LSA,
  // optimisation); after an initial exchange's were added: V_0 from its sum (EM).
  void count_merged(uint32_t k, uint32_t n);
  void refresh_initial();
  // DP-FedAvg: adds noise (dim() values) to the sum of chain k's dx.
  void add_noise(uint32_t k, const double* noise);
  // Distributed DP: the decoded sum of m members' noised dx (optimisation family).
  void add_sum(uint32_t k, const double* sum, uint32_t m);
  // The server rule after round t; unchanged when nothing was aggregated.
  void finish_round(uint32_t t);

  // The reported iterate (LSA theta, optimisation x or Fed-RR's x_RR, EM
  // T(Shat)) and what a round result carries (LSA: theta_{t+1}).
  const double* model() const;
  int model_dim() const { return family_ == task::Family::kEm ? dim_ : dim_; }
  const double* statistic() const;  // EM: Shat_k
  // Fed-RR's Polyak-Ruppert averages of its two chains (after the burn-in);
  // null for a single chain (the evaluation averages a plain run's iterates).
  const double* average_gamma() const { return chains_ == 2 ? rr_.average_gamma() : nullptr; }
  const double* average_2gamma() const { return chains_ == 2 ? rr_.average_2gamma() : nullptr; }

  // The whole server state (to persist after each round), as slices of the
  // core's memory in a fixed layout; restore writes the same layout into
  // import_targets() and then calls finish_import().
  void state_slices(std::vector<StateSlice>& out) const;
  void import_targets(std::vector<StateTarget>& out);
  Status finish_import();

 private:
  void refresh_broadcast();

  task::Family family_ = task::Family::kLsa;
  task::AlgorithmChoice choice_{};
  uint32_t chains_ = 1;
  int dim_ = 0, segment_dim_ = 0, broadcast_dim_ = 0;
  int gmm_components_ = 0, gmm_dim_ = 0;  // EM: G and p of the M-step
  // The family's arena. calloc: pages never written (a replaying session's
  // exact sums) take no memory.
  std::unique_ptr<uint8_t, void (*)(void*)> memory_{nullptr, std::free};
  const double* broadcast_ = nullptr;  // the server's own (LSA, one chain) or copy_
  std::vector<double> copy_;           // EM: Shat_k then T(Shat_k); Fed-RR: both chains
  std::vector<double> staging_;        // EM's restore; Fed-RR's averaged count
  mutable double averaged_ = 0.0;      // Fed-RR's count, as the state slice holds it
  algorithms::LsaServer<double> lsa_;
  algorithms::FedOptServer<double> opt_[task::kMaxSegments];
  algorithms::RichardsonRomberg<double> rr_;
  using EmServer = algorithms::FedEmServer<double, problems::GmmMStepOf<double>>;
  EmServer em_;
  bool stale_weights_ = false;
  double stale_weight_ = 1.0;
};

}  // namespace fedrt::protocol
