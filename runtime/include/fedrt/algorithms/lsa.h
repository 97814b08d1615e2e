#pragma once
// The federated LSA family as client/server pairs (docs/algorithms.md 2 and 3):
// FedLSA (SCAFFLSA paper Alg. 1), SCAFFLSA with deterministic communication
// (Alg. 4, "H2") and with probabilistic communication (Alg. 3, "H1").
// Pure: no I/O, no clocks, no threads, no heap; memory comes from an Arena.

#include <cstdint>
#include <cstring>

#include "fedrt/core/arena.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/core/types.h"

namespace fedrt::algorithms {

enum class LsaAlgorithm : uint8_t {
  kFedLsa = 0,        // theta <- theta - eta (A theta - b)
  kScaffLsa = 1,      // + control variate xi_c, communication every H steps
  kScaffLsaProb = 2,  // + control variate xi_c, communication w.p. p per step
};

constexpr bool UsesControlVariate(LsaAlgorithm a) { return a != LsaAlgorithm::kFedLsa; }
const char* LsaAlgorithmName(LsaAlgorithm a);

// What the server announces for one round (the broadcast besides theta_t).
struct RoundPlan {
  uint32_t round = 0;        // t
  uint32_t local_steps = 0;  // H (or the geometric block length under H1)
};

// Hyper-parameters shared by client and server.
template <class S>
struct LsaHyper {
  LsaAlgorithm algorithm = LsaAlgorithm::kFedLsa;
  S step_size = S(0.01);      // eta
  uint32_t local_steps = 1;   // H
  double comm_prob = 1.0;     // p (SCAFFLSA-H1 only)
};

// Device side: agent c's state machine, begin_round -> local steps -> end_round
// -> apply_global. Keeps xi_c across rounds (and absences from rounds).
template <class S>
class LsaClient {
 public:
  LsaClient() = default;

  static constexpr size_t ArenaBytes(int dim) { return sizeof(S) * 3 * static_cast<size_t>(dim) + Arena::kAlignment; }

  // Allocates theta_hat^c, xi_c (zero) and eta xi_c in `arena`.
  static Result<LsaClient> create(Arena& arena, int dim, const LsaHyper<S>& hyper) {
    if (dim <= 0) return Status::InvalidArgument("lsa client: dimension must be positive");
    if (!(hyper.step_size > S(0))) return Status::InvalidArgument("lsa client: step size must be positive");
    auto buf = arena.allocate<S>(static_cast<size_t>(dim) * 3);
    if (!buf.ok()) return buf.status();
    LsaClient c;
    c.dim_ = dim;
    c.hyper_ = hyper;
    c.theta_hat_ = buf->data;
    c.xi_ = buf->data + dim;
    c.eta_xi_ = buf->data + 2 * dim;
    return c;
  }

  // theta_{t,0}^c = theta_t; the block has plan.local_steps local steps.
  void begin_round(const S* theta_global, const RoundPlan& plan) {
    std::memcpy(theta_hat_, theta_global, sizeof(S) * dim_);
    plan_ = plan;
    const S eta = hyper_.step_size;
    for (int i = 0; i < dim_; ++i) eta_xi_[i] = eta * xi_[i];
  }

  // H local steps: theta <- theta - eta (A_c(Z) theta - b_c(Z) - xi_c), with
  // xi_c = 0 for FedLSA. Z_{t,h} are drawn from `rng` in step order.
  template <int D, class Oracle>
  void run_local_steps(const Oracle& oracle, CounterRng& rng) {
    LocalSteps<D>(oracle, theta_hat_, UsesControlVariate(hyper_.algorithm) ? eta_xi_ : nullptr, hyper_.step_size,
                  plan_.local_steps, dim_, rng);
  }

  // The same H steps on any theta: theta <- theta - eta (A_c(Z) theta - b_c(Z)),
  // then theta <- theta + eta_xi when eta_xi is given (host lane kernels
  // fall back to it, sim/td_lanes.h).
  template <int D, class Oracle>
  static void LocalSteps(const Oracle& oracle, S* theta_hat, const S* eta_xi, S eta, uint32_t H, int dim,
                         CounterRng& rng) {
    auto theta = MapVec<D>(theta_hat, dim);
    if (eta_xi != nullptr) {
      const auto exi = MapVec<D>(eta_xi, dim);
      for (uint32_t h = 0; h < H; ++h) {
        oracle.template step<D>(theta, eta, rng);
        theta += exi;
      }
    } else {
      for (uint32_t h = 0; h < H; ++h) oracle.template step<D>(theta, eta, rng);
    }
  }

  // eta xi_c for this round (set by begin_round), null for FedLSA.
  const S* eta_control_variate() const { return UsesControlVariate(hyper_.algorithm) ? eta_xi_ : nullptr; }
  S step_size() const { return hyper_.step_size; }

  // The update sent to the server: theta_{t,H}^c.
  const S* update() const { return theta_hat_; }
  S* mutable_update() { return theta_hat_; }  // for restoring a pending update

  // Compressed uplink: replaces theta_{t,H}^c by what the server reconstructs
  // from the payload, so xi_c's update in apply_global uses the same value as
  // the server's average and mean_c xi_c stays 0 (docs/algorithms.md 2, 4).
  void set_sent_update(const S* sent) { std::memcpy(theta_hat_, sent, sizeof(S) * dim_); }

  // After the server's average theta_{t+1}: xi_c <- xi_c + coef (theta_{t+1} - theta_{t,H}^c),
  // coef = 1/(eta H) (H2) or p/eta (H1). No-op for FedLSA.
  void apply_global(const S* theta_next) {
    if (!UsesControlVariate(hyper_.algorithm)) return;
    const S eta = hyper_.step_size;
    const S coef = hyper_.algorithm == LsaAlgorithm::kScaffLsa
                       ? S(1) / (eta * static_cast<S>(hyper_.local_steps))
                       : static_cast<S>(hyper_.comm_prob) / eta;
    for (int i = 0; i < dim_; ++i) xi_[i] += coef * (theta_next[i] - theta_hat_[i]);
  }

  int dim() const { return dim_; }
  const S* control_variate() const { return xi_; }
  S* mutable_control_variate() { return xi_; }  // for persistence / restore

 private:
  int dim_ = 0;
  LsaHyper<S> hyper_{};
  RoundPlan plan_{};
  S* theta_hat_ = nullptr;
  S* xi_ = nullptr;
  S* eta_xi_ = nullptr;
};

// Coordinator side: plans rounds and averages the reported local iterates by
// streaming accumulation, O(d) memory whatever the number of agents. The sums
// are exact (core/exact_sum_array.h): the arrival order of the updates does
// not change a bit of theta_{t+1}.
template <class S>
class LsaServer {
 public:
  LsaServer() = default;

  static constexpr size_t ArenaBytes(int dim) {
    return sizeof(S) * static_cast<size_t>(dim) + Arena::kAlignment + ExactSumArray::ArenaBytes(dim);
  }

  static Result<LsaServer> create(Arena& arena, int dim, const LsaHyper<S>& hyper, const S* theta0,
                                  uint64_t seed, uint64_t run) {
    if (dim <= 0) return Status::InvalidArgument("lsa server: dimension must be positive");
    if (hyper.local_steps == 0) return Status::InvalidArgument("lsa server: local steps must be positive");
    if (hyper.algorithm == LsaAlgorithm::kScaffLsaProb && !(hyper.comm_prob > 0.0 && hyper.comm_prob <= 1.0))
      return Status::InvalidArgument("lsa server: communication probability must be in (0, 1]");
    auto buf = arena.allocate<S>(static_cast<size_t>(dim));
    if (!buf.ok()) return buf.status();
    auto sums = ExactSumArray::create(arena, static_cast<size_t>(dim));
    if (!sums.ok()) return sums.status();
    LsaServer s;
    s.dim_ = dim;
    s.hyper_ = hyper;
    s.theta_ = buf->data;
    s.sum_ = *sums;
    s.seed_ = seed;
    s.run_ = run;
    std::memcpy(s.theta_, theta0, sizeof(S) * dim);
    return s;
  }

  // Plan of round t: H local steps, or under H1 the number of steps until the
  // next Bernoulli(p) success (B_k = 1), i.e. a Geometric(p) block length >= 1.
  RoundPlan start_round(uint32_t round) {
    round_ = round;
    weight_ = 0;
    reports_ = 0;
    sum_.clear();
    RoundPlan plan;
    plan.round = round;
    if (hyper_.algorithm == LsaAlgorithm::kScaffLsaProb) {
      CounterRng rng(seed_, run_, /*agent=*/0, round, RngStream::kCommunication);
      uint32_t k = 1;
      while (!rng.bernoulli(hyper_.comm_prob) && k < kMaxBlock) ++k;
      plan.local_steps = k;
    } else {
      plan.local_steps = hyper_.local_steps;
    }
    return plan;
  }

  // theta_t, broadcast to the sampled agents.
  const S* global() const { return theta_; }

  // Streaming sum of the reported theta_{t,H}^c with weight w_c.
  void accumulate(const S* update, S weight = S(1)) {
    for (int i = 0; i < dim_; ++i) sum_.add(static_cast<size_t>(i), static_cast<double>(weight * update[i]));
    weight_ += weight;
    ++reports_;
  }
  // A chunked update (weight 1): entries [first, first + n) of theta_{t,H}^c
  // as they arrive (negated: taken back), then count_report() once it is whole.
  void accumulate_part(int first, int n, const S* values, bool negate = false) {
    for (int i = 0; i < n; ++i) sum_.add(first + i, static_cast<double>(negate ? -values[i] : values[i]));
  }
  void count_report() {
    weight_ += S(1);
    ++reports_;
  }

  // theta_{t+1} = sum_c w_c theta_{t,H}^c / sum_c w_c; unchanged when nobody reported.
  void finish_round() {
    if (reports_ == 0) return;
    const S inv = S(1) / weight_;
    for (int i = 0; i < dim_; ++i) theta_[i] = static_cast<S>(sum_.value(static_cast<size_t>(i))) * inv;
  }

  uint32_t reports() const { return reports_; }
  int dim() const { return dim_; }
  S* mutable_global() { return theta_; }  // for restore from storage
  // The round's exact sum of theta_{t,H}^c, for a partial aggregate to be
  // taken out of it or added to it (then count_report() per update).
  ExactSumArray& round_sum() { return sum_; }

  static constexpr uint32_t kMaxBlock = 1u << 30;

 private:
  int dim_ = 0;
  LsaHyper<S> hyper_{};
  S* theta_ = nullptr;
  ExactSumArray sum_;
  S weight_ = 0;
  uint32_t reports_ = 0;
  uint32_t round_ = 0;
  uint64_t seed_ = 0;
  uint64_t run_ = 0;
};

// Whether agent c takes part in round t (probability q), keyed so every
// driver (simulator, coordinator) draws the same participants.
inline bool IsSampled(uint64_t seed, uint64_t run, uint32_t agent, uint32_t round, double q) {
  if (q >= 1.0) return true;
  CounterRng rng(seed, run, agent, round, RngStream::kParticipation);
  return rng.bernoulli(q);
}

inline const char* LsaAlgorithmName(LsaAlgorithm a) {
  switch (a) {
    case LsaAlgorithm::kFedLsa: return "fedlsa";
    case LsaAlgorithm::kScaffLsa: return "scafflsa";
    case LsaAlgorithm::kScaffLsaProb: return "scafflsa-prob";
  }
  return "?";
}

}  // namespace fedrt::algorithms
