#pragma once
// The federated optimisation family as client/server pairs (docs/algorithms.md 2
// and 3): FedAvg (local SGD), Scaffold, FedProx (inexact: H local SGD steps on
// f_c + (mu/2)||x - x_t||^2; exact: the proximal point, least squares only).
// Every client sends a plain vector update() of update_dim() scalars that
// starts with dx_c = x^c_{t,H} - x_t (Scaffold appends dc_c); the server
// applies x_{t+1} = x_t + eta_g mean(dx). Pure: no I/O, clocks, threads, heap.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "fedrt/algorithms/lsa.h"  // RoundPlan, IsSampled
#include "fedrt/core/arena.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::algorithms {

enum class FedOptAlgorithm : uint8_t {
  kFedAvg = 0,        // x <- x - eta grad F_c(x; Z)
  kScaffold = 1,      // x <- x - eta (grad F_c(x; Z) - c_c + c)
  kFedProx = 2,       // x <- x - eta (grad F_c(x; Z) + mu (x - x_t))
  kFedProxExact = 3,  // x = argmin f_c(x) + (mu/2)||x - x_t||^2 (least squares)
};

inline const char* FedOptAlgorithmName(FedOptAlgorithm a) {
  switch (a) {
    case FedOptAlgorithm::kFedAvg: return "fedavg";
    case FedOptAlgorithm::kScaffold: return "scaffold";
    case FedOptAlgorithm::kFedProx: return "fedprox";
    case FedOptAlgorithm::kFedProxExact: return "fedprox-exact";
  }
  return "?";
}

// Hyper-parameters shared by client and server.
template <class S>
struct FedOptHyper {
  FedOptAlgorithm algorithm = FedOptAlgorithm::kFedAvg;
  S step_size = S(0.01);     // eta (gamma in the Fed-RR talk)
  uint32_t local_steps = 1;  // H
  uint32_t batch = 0;        // B samples per stochastic gradient; 0 = full gradient
  S prox_mu = S(1);          // mu (FedProx)
  S server_step = S(1);      // eta_g
  // DP-FedAvg (docs/privacy.md): clip > 0 scales dx by min(1, clip/||dx||);
  // fixed_denominator > 0 (q N) divides the server's sum instead of the weight.
  S clip = S(0);
  S fixed_denominator = S(0);
};

// Scalars in a client's upload: dx (and dc for Scaffold).
inline int FedOptUpdateDim(FedOptAlgorithm a, int dim) { return a == FedOptAlgorithm::kScaffold ? 2 * dim : dim; }
// Scalars in the server's broadcast: x_t (and c for Scaffold).
inline int FedOptBroadcastDim(FedOptAlgorithm a, int dim) { return FedOptUpdateDim(a, dim); }

// Device side: agent c. Keeps the Scaffold control variate c_c across rounds.
template <class S>
class FedOptClient {
 public:
  FedOptClient() = default;

  // Bytes of arena memory one client needs (for sizing a static arena).
  static constexpr size_t ArenaBytes(int dim) { return sizeof(S) * 7 * static_cast<size_t>(dim) + Arena::kAlignment; }

  static Result<FedOptClient> create(Arena& arena, int dim, const FedOptHyper<S>& hyper) {
    if (dim <= 0) return Status::InvalidArgument("fedopt client: dimension must be positive");
    if (!(hyper.step_size > S(0))) return Status::InvalidArgument("fedopt client: step size must be positive");
    if (hyper.local_steps == 0) return Status::InvalidArgument("fedopt client: local steps must be positive");
    if ((hyper.algorithm == FedOptAlgorithm::kFedProx || hyper.algorithm == FedOptAlgorithm::kFedProxExact) &&
        !(hyper.prox_mu >= S(0)))
      return Status::InvalidArgument("fedopt client: prox weight mu must be >= 0");
    const size_t d = static_cast<size_t>(dim);
    auto buf = arena.allocate<S>(7 * d);
    if (!buf.ok()) return buf.status();
    FedOptClient c;
    c.dim_ = dim;
    c.hyper_ = hyper;
    c.x_ = buf->data;
    c.x_t_ = buf->data + d;
    c.grad_ = buf->data + 2 * d;
    c.c_own_ = buf->data + 3 * d;
    c.c_global_ = buf->data + 4 * d;
    c.update_ = buf->data + 5 * d;  // 2d: dx then dc
    return c;
  }

  int update_dim() const { return FedOptUpdateDim(hyper_.algorithm, dim_); }
  int broadcast_dim() const { return FedOptBroadcastDim(hyper_.algorithm, dim_); }

  // Receives the broadcast (x_t, and c for Scaffold): x^c_{t,0} = x_t.
  void begin_round(const S* broadcast, const RoundPlan& plan) {
    std::memcpy(x_t_, broadcast, sizeof(S) * dim_);
    std::memcpy(x_, broadcast, sizeof(S) * dim_);
    if (hyper_.algorithm == FedOptAlgorithm::kScaffold) std::memcpy(c_global_, broadcast + dim_, sizeof(S) * dim_);
    plan_ = plan;
  }

  // plan.local_steps local steps of the rule above (one proximal step for
  // fedprox-exact), samples Z drawn from `rng` in step order; then fills
  // update(): dx = x^c - x_t and, for Scaffold, dc = c_c^+ - c_c with
  // c_c^+ = c_c - c + (x_t - x^c)/(eta H). c_c itself moves only in commit().
  template <class Oracle>
  void run_local_steps(const Oracle& oracle, CounterRng& rng) {
    const int d = dim_;
    const S eta = hyper_.step_size;
    const uint32_t H = plan_.local_steps;
    switch (hyper_.algorithm) {
      case FedOptAlgorithm::kFedAvg:
        for (uint32_t h = 0; h < H; ++h) {
          oracle.gradient(x_, grad_, hyper_.batch, rng);
          for (int i = 0; i < d; ++i) x_[i] -= eta * grad_[i];
        }
        break;
      case FedOptAlgorithm::kScaffold:
        for (uint32_t h = 0; h < H; ++h) {
          oracle.gradient(x_, grad_, hyper_.batch, rng);
          for (int i = 0; i < d; ++i) x_[i] -= eta * (grad_[i] - c_own_[i] + c_global_[i]);
        }
        break;
      case FedOptAlgorithm::kFedProx: {
        const S mu = hyper_.prox_mu;
        for (uint32_t h = 0; h < H; ++h) {
          oracle.gradient(x_, grad_, hyper_.batch, rng);
          for (int i = 0; i < d; ++i) x_[i] -= eta * (grad_[i] + mu * (x_[i] - x_t_[i]));
        }
        break;
      }
      case FedOptAlgorithm::kFedProxExact:
        if constexpr (Oracle::kHasExactProx) oracle.prox(x_t_, x_);
        break;
    }
    for (int i = 0; i < d; ++i) update_[i] = x_[i] - x_t_[i];
    if (hyper_.clip > S(0)) {  // DP-FedAvg: ||dx|| <= clip (sum of squares in index order)
      S sq = S(0);
      for (int i = 0; i < d; ++i) sq += update_[i] * update_[i];
      const S norm = std::sqrt(sq);
      within_clip_ = !(norm > hyper_.clip);
      if (norm > hyper_.clip) {
        const S scale = hyper_.clip / norm;
        for (int i = 0; i < d; ++i) update_[i] *= scale;
      }
    }
    if (hyper_.algorithm == FedOptAlgorithm::kScaffold) {
      const S inv = S(1) / (eta * static_cast<S>(H));
      for (int i = 0; i < d; ++i) update_[d + i] = -c_global_[i] - update_[i] * inv;  // c_c^+ - c_c
    }
  }

  // The server aggregated this round's update as `sent` (update_dim()
  // scalars: update() itself, or what a compressed uplink let the server
  // reconstruct, dx_hat and dc_hat): Scaffold sets c_c <- c_c + dc_hat, so the
  // agents' c_c and the server's c = c + (|S|/N) mean(dc_hat) keep
  // mean_c c_c = c (docs/algorithms.md 2, 4). An update that was not
  // aggregated is never committed. Other algorithms keep no state.
  void commit(const S* sent) {
    if (hyper_.algorithm != FedOptAlgorithm::kScaffold) return;
    for (int i = 0; i < dim_; ++i) c_own_[i] += sent[dim_ + i];
  }

  // The upload: update_dim() scalars (dx, then dc for Scaffold).
  const S* update() const { return update_; }
  const S* local_iterate() const { return x_; }  // x^c_{t,H}
  const S* control_variate() const { return c_own_; }  // c_c (Scaffold)
  S* mutable_control_variate() { return c_own_; }       // for persistence / parking
  S* mutable_update() { return update_; }                // for restoring a pending update
  int dim() const { return dim_; }
  // Adaptive clipping (algorithms/adaptive_clip.h): this round's clip C_t,
  // and after the local steps b = 1[||dx|| <= C_t], taken before clipping.
  void set_clip(S clip) { hyper_.clip = clip; }
  bool within_clip() const { return within_clip_; }

 private:
  int dim_ = 0;
  bool within_clip_ = true;
  FedOptHyper<S> hyper_{};
  RoundPlan plan_{};
  S* x_ = nullptr;
  S* x_t_ = nullptr;
  S* grad_ = nullptr;
  S* c_own_ = nullptr;
  S* c_global_ = nullptr;
  S* update_ = nullptr;
};

// Coordinator side: streaming weighted mean of the updates, O(d) memory. The
// sums are exact (core/exact_sum_array.h), so the arrival order does not matter.
template <class S>
class FedOptServer {
 public:
  FedOptServer() = default;

  // Arena bytes of create() for any algorithm (Scaffold's, the largest).
  static constexpr size_t ArenaBytes(int dim) { return ArenaBytes(dim, FedOptAlgorithm::kScaffold); }
  // Arena bytes of create() for `algorithm`: update_dim() scalars and exact sums.
  static constexpr size_t ArenaBytes(int dim, FedOptAlgorithm algorithm) {
    const size_t m = static_cast<size_t>(dim) * (algorithm == FedOptAlgorithm::kScaffold ? 2 : 1);
    return sizeof(S) * m + Arena::kAlignment + ExactSumArray::ArenaBytes(m);
  }

  // x_0 = x0, c = 0.
  static Result<FedOptServer> create(Arena& arena, int dim, const FedOptHyper<S>& hyper, const S* x0,
                                     uint32_t num_agents) {
    if (dim <= 0) return Status::InvalidArgument("fedopt server: dimension must be positive");
    if (hyper.local_steps == 0) return Status::InvalidArgument("fedopt server: local steps must be positive");
    if (num_agents == 0) return Status::InvalidArgument("fedopt server: needs at least one agent");
    if (!(hyper.server_step > S(0))) return Status::InvalidArgument("fedopt server: server step must be positive");
    const size_t d = static_cast<size_t>(dim);
    const size_t m = static_cast<size_t>(FedOptUpdateDim(hyper.algorithm, dim));  // = broadcast_dim()
    auto buf = arena.allocate<S>(m);
    if (!buf.ok()) return buf.status();
    auto sums = ExactSumArray::create(arena, m);
    if (!sums.ok()) return sums.status();
    FedOptServer s;
    s.dim_ = dim;
    s.hyper_ = hyper;
    s.agents_ = num_agents;
    s.broadcast_ = buf->data;  // x_t then c
    s.sum_ = *sums;
    std::memcpy(s.broadcast_, x0, sizeof(S) * d);
    return s;
  }

  // Plan of round t: H local steps (1 for the exact prox).
  RoundPlan start_round(uint32_t round) {
    weight_ = S(0);
    reports_ = 0;
    sum_.clear();
    RoundPlan plan;
    plan.round = round;
    plan.local_steps = hyper_.algorithm == FedOptAlgorithm::kFedProxExact ? 1u : hyper_.local_steps;
    return plan;
  }

  const S* broadcast() const { return broadcast_; }  // broadcast_dim() scalars
  const S* global() const { return broadcast_; }     // x_t
  int update_dim() const { return FedOptUpdateDim(hyper_.algorithm, dim_); }
  int broadcast_dim() const { return FedOptBroadcastDim(hyper_.algorithm, dim_); }

  // Streaming sum of w_c * update_c; `reports` agents stand behind it (an
  // aggregate of m updates passes their mean with weight m and reports m).
  void accumulate(const S* update, S weight = S(1), uint32_t reports = 1) {
    const int m = update_dim();
    for (int i = 0; i < m; ++i) sum_.add(static_cast<size_t>(i), static_cast<double>(weight * update[i]));
    weight_ += weight;
    reports_ += reports;
  }
  // Buffered asynchronous aggregation (docs/async.md): one update whose dx
  // counts w = (1 + s)^-a times (staleness s) and whose dc (Scaffold) counts
  // once, so finish_round() steps x_{v+1} = x_v + eta_g sum_i w_i dx_i / K
  // over the K updates of the buffer and c by sum_i dc_i / N.
  void accumulate_stale(const S* update, S w) {
    const int m = update_dim();
    for (int i = 0; i < m; ++i) sum_.add(static_cast<size_t>(i), static_cast<double>(i < dim_ ? w * update[i] : update[i]));
    weight_ += S(1);
    reports_ += 1;
  }
  // A chunked update (weight 1): entries [first, first + n) as they arrive
  // (negated: taken back), then count_report() once it is whole.
  void accumulate_part(int first, int n, const S* values, bool negate = false) {
    for (int i = 0; i < n; ++i) sum_.add(first + i, static_cast<double>(negate ? -values[i] : values[i]));
  }
  void count_report() {
    weight_ += S(1);
    reports_ += 1;
  }

  // DP-FedAvg's noise: adds noise[i] to the sum of dx_i (dim() values).
  void add_noise(const S* noise) {
    for (int i = 0; i < dim_; ++i) sum_.add(static_cast<size_t>(i), static_cast<double>(noise[i]));
  }

  // x_{t+1} = x_t + eta_g sum_c w_c dx_c / sum_c w_c (DP-FedAvg: divided by
  // the fixed denominator q N instead); Scaffold also
  // c <- c + (|S|/N) sum_c w_c dc_c / sum_c w_c. Unchanged when nobody
  // reported, except under DP-FedAvg, whose noise is released every round
  // (an empty round that released nothing would tell that nobody took part).
  void finish_round() {
    if (reports_ == 0 && !(hyper_.fixed_denominator > S(0))) return;
    const S inv = S(1) / (hyper_.fixed_denominator > S(0) ? hyper_.fixed_denominator : weight_);
    for (int i = 0; i < dim_; ++i) broadcast_[i] += hyper_.server_step * static_cast<S>(sum_.value(i)) * inv;
    if (hyper_.algorithm == FedOptAlgorithm::kScaffold) {
      const S frac = static_cast<S>(reports_) / static_cast<S>(agents_);
      for (int i = 0; i < dim_; ++i) broadcast_[dim_ + i] += frac * static_cast<S>(sum_.value(dim_ + i)) * inv;
    }
  }

  uint32_t reports() const { return reports_; }
  int dim() const { return dim_; }
  S* mutable_broadcast() { return broadcast_; }  // for restore from storage
  // The denominator of DP-FedAvg's step (buffered asynchronous rounds: K, not q N).
  void set_fixed_denominator(S d) { hyper_.fixed_denominator = d; }
  // The round's exact sum of the updates, for a partial aggregate to be taken
  // out of it or added to it (then count_report() per update).
  ExactSumArray& round_sum() { return sum_; }

 private:
  int dim_ = 0;
  FedOptHyper<S> hyper_{};
  uint32_t agents_ = 0;
  S* broadcast_ = nullptr;
  ExactSumArray sum_;
  S weight_ = S(0);
  uint32_t reports_ = 0;
};

}  // namespace fedrt::algorithms
