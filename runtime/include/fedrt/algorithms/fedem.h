#pragma once
// Federated EM (FedEM talk; docs/algorithms.md 5) as client/server pairs: FedEM
// (quantized Delta_c with control variates V_c, partial participation p),
// naive FedEM (no V's) and VR-FedEM (SPIDER local statistics in cycles of
// k_in iterations). The M-step T runs on the server only; agents receive
// Shat_k and T(Shat_k). Pure: no I/O, no threads, memory from an Arena.
//
// Generic over the EM model, as the other cores are over their oracles: the
// client takes any oracle with points(), mean_stat(theta, out) = sbar_c(theta)
// and add_stat(theta, i, w, out) += w s_i(theta); the server any M-step
// object with operator()(shat, theta) = T(shat) (the Gaussian mixture's:
// problems/gmm_oracle.h, GmmMStepOf).

#include <cstdint>
#include <cstring>

#include "fedrt/compression/payload.h"
#include "fedrt/compression/quantizer.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::algorithms {

enum class EmAlgorithm : uint8_t {
  kFedEm = 0,       // Delta_c = S_c - Shat_k - V_c, V_c <- V_c + alpha Q(Delta_c)
  kFedEmNaive = 1,  // Delta_c = S_c - Shat_k (no control variates)
  kVrFedEm = 2,     // FedEM with SPIDER estimates S_c
};

inline const char* EmAlgorithmName(EmAlgorithm a) {
  switch (a) {
    case EmAlgorithm::kFedEm: return "fedem";
    case EmAlgorithm::kFedEmNaive: return "fedem-naive";
    case EmAlgorithm::kVrFedEm: return "vr-fedem";
  }
  return "?";
}

template <class S>
struct EmHyper {
  EmAlgorithm algorithm = EmAlgorithm::kFedEm;
  S step = S(1);              // gamma
  double participation = 1;   // p
  uint32_t batch = 0;         // b (0 = full local pass)
  uint32_t inner_iters = 10;  // k_in (VR-FedEM)
  compression::QuantizerSpec quantizer;
};

// Agent c: its local statistic S_{k,c} and (VR-FedEM) the SPIDER state. The
// control variate V_c is the memory of the agent's compressed uplink
// (compression/diana.h with g_c = S_c - Shat_k and alpha = 1/(1+omega); naive
// FedEM: no memory): the agent sends Q(S_c - Shat_k - V_c) = Q(Delta_c) and
// moves V_c once the server took the message (docs/algorithms.md 5).
template <class S>
class FedEmClient {
 public:
  FedEmClient() = default;

  static constexpr size_t ArenaBytes(int dim) { return sizeof(S) * 2 * static_cast<size_t>(dim) + Arena::kAlignment; }

  static Result<FedEmClient> create(Arena& arena, int dim, const EmHyper<S>& hyper) {
    if (dim <= 0) return Status::InvalidArgument("fedem client: dimension must be positive");
    if (hyper.inner_iters == 0) return Status::InvalidArgument("fedem client: inner iterations must be positive");
    auto buf = arena.allocate<S>(static_cast<size_t>(dim) * 2);
    if (!buf.ok()) return buf.status();
    FedEmClient c;
    c.dim_ = dim;
    c.hyper_ = hyper;
    c.stat_ = buf->data;              // S_{k,c}
    c.prev_theta_ = buf->data + dim;  // T(Shat_{k-1}) (VR-FedEM)
    return c;
  }

  // V_{0,c} = sbar_c(T(Shat_0)) - Shat_0 rounded to float32 (it is sent once,
  // as float32, so that the server's V_0 = mean_c V_{0,c} is exact); naive
  // FedEM: 0. Writes V_{0,c} to `v0` (dim values) and starts the SPIDER state.
  template <class Oracle>
  void init(const Oracle& oracle, const S* shat0, const S* theta0, S* v0) {
    oracle.mean_stat(theta0, stat_);
    std::memcpy(prev_theta_, theta0, sizeof(S) * dim_);
    for (int i = 0; i < dim_; ++i) {
      v0[i] = hyper_.algorithm == EmAlgorithm::kFedEmNaive ? S(0)
                                                           : static_cast<S>(static_cast<float>(stat_[i] - shat0[i]));
    }
  }

  // S_{k+1,c}, the local approximation of sbar_c(T(Shat_k)). Returns the
  // number of per-point statistic evaluations it cost.
  //   full pass (b = 0): sbar_c(theta_k)                                   m
  //   mini-batch:        b^{-1} sum_B s_i(theta_k)                         b
  //   VR-FedEM, k % k_in == 0: sbar_c(theta_k)                             m
  //   VR-FedEM otherwise: S_{k,c} + b^{-1} sum_B (s_i(theta_k) - s_i(theta_{k-1}))   2b
  template <class Oracle>
  uint64_t compute_statistic(const Oracle& oracle, const S* theta, uint32_t k, CounterRng& rng) {
    const uint32_t m = oracle.points();
    const uint32_t b = hyper_.batch == 0 || hyper_.batch > m ? m : hyper_.batch;
    uint64_t evals = 0;
    if (hyper_.algorithm == EmAlgorithm::kVrFedEm) {
      if (k % hyper_.inner_iters == 0 || b == m) {
        oracle.mean_stat(theta, stat_);
        evals = m;
      } else {
        const S w = S(1) / static_cast<S>(b);
        for (uint32_t j = 0; j < b; ++j) {
          const uint32_t i = rng.below(m);
          oracle.add_stat(theta, i, w, stat_);
          oracle.add_stat(prev_theta_, i, -w, stat_);
        }
        evals = 2ull * b;
      }
      std::memcpy(prev_theta_, theta, sizeof(S) * dim_);
      return evals;
    }
    if (b == m) {
      oracle.mean_stat(theta, stat_);
      return m;
    }
    for (int i = 0; i < dim_; ++i) stat_[i] = 0;
    const S w = S(1) / static_cast<S>(b);
    for (uint32_t j = 0; j < b; ++j) oracle.add_stat(theta, rng.below(m), w, stat_);
    return b;
  }

  const S* statistic() const { return stat_; }  // S_{k,c}
  // S_{k,c} then T(Shat_{k-1}): 2 dim() scalars, VR-FedEM's state across rounds (for parking).
  S* mutable_spider_state() { return stat_; }
  int dim() const { return dim_; }

 private:
  int dim_ = 0;
  EmHyper<S> hyper_{};
  S* stat_ = nullptr;
  S* prev_theta_ = nullptr;
};

// Server: Shat_{k+1} = Shat_k + gamma/(n p) sum_{c in A} Q(Delta_c) + gamma V_k,
// V_{k+1} = V_k + alpha/n sum_{c in A} Q(Delta_c), theta_{k+1} = T(Shat_{k+1}),
// with T the model's M-step (MStep: operator()(const S* shat, S* theta)).
template <class S, class MStep>
class FedEmServer {
 public:
  FedEmServer() = default;

  static constexpr size_t ArenaBytes(int dim) {
    return 4 * sizeof(S) * static_cast<size_t>(dim) + Arena::kAlignment +
           2 * ExactSumArray::ArenaBytes(static_cast<size_t>(dim));
  }

  static Result<FedEmServer> create(Arena& arena, int dim, const MStep& m_step, uint32_t agents,
                                    const EmHyper<S>& hyper, const S* shat0) {
    if (dim <= 0) return Status::InvalidArgument("fedem server: dimension must be positive");
    if (agents == 0) return Status::InvalidArgument("fedem server: no agents");
    if (!(hyper.participation > 0 && hyper.participation <= 1))
      return Status::InvalidArgument("fedem server: participation must be in (0, 1]");
    FEDRT_TRY(compression::ValidateSpec(hyper.quantizer));
    auto buf = arena.allocate<S>(static_cast<size_t>(dim) * 4);
    if (!buf.ok()) return buf.status();
    auto sums = ExactSumArray::create(arena, static_cast<size_t>(dim));
    if (!sums.ok()) return sums.status();
    auto v0_sums = ExactSumArray::create(arena, static_cast<size_t>(dim));
    if (!v0_sums.ok()) return v0_sums.status();
    FedEmServer s;
    s.dim_ = dim;
    s.m_step_ = m_step;
    s.n_ = agents;
    s.hyper_ = hyper;
    s.alpha_ = hyper.algorithm == EmAlgorithm::kFedEmNaive
                   ? S(0)
                   : static_cast<S>(compression::ControlVariateStep(hyper.quantizer, dim));
    s.shat_ = buf->data;
    s.v_ = buf->data + dim;
    s.theta_ = buf->data + 2 * dim;
    s.msg_ = buf->data + 3 * dim;
    s.sum_ = *sums;
    s.v0_sum_ = *v0_sums;
    std::memcpy(s.shat_, shat0, sizeof(S) * dim);
    s.m_step_(s.shat_, s.theta_);
    return s;
  }

  // V_0 = sum_c V_{0,c} / n over the agents' initial control variates (an
  // exact sum: the order in which they arrive does not matter).
  void add_initial_control_variate(const S* v0c) {
    for (int i = 0; i < dim_; ++i) {
      v0_sum_.add(static_cast<size_t>(i), static_cast<double>(v0c[i] / static_cast<S>(n_)));
      v_[i] = static_cast<S>(v0_sum_.value(static_cast<size_t>(i)));
    }
  }

  void start_round() {
    sum_.clear();
  }
  // Decodes one active agent's payload (untrusted) and adds Q(Delta_c).
  Status receive(const uint8_t* bytes, size_t n) {
    FEDRT_TRY(compression::Decode<S>(hyper_.quantizer, bytes, n, dim_, msg_));
    accumulate(msg_);
    return Status::Ok();
  }
  // Adds one active agent's decoded Q(Delta_c).
  void accumulate(const S* message) {
    for (int i = 0; i < dim_; ++i) sum_.add(static_cast<size_t>(i), static_cast<double>(message[i]));
  }
  // Adds sum_{c in A} Q(Delta_c) as one vector (secure aggregation: only the sum is known).
  void receive_sum(const S* message_sum) { accumulate(message_sum); }
  void finish_round() {
    const S g = hyper_.step;
    const S scale = g / (static_cast<S>(n_) * static_cast<S>(hyper_.participation));
    const S a = alpha_ / static_cast<S>(n_);
    for (int i = 0; i < dim_; ++i) {
      const S sum = static_cast<S>(sum_.value(static_cast<size_t>(i)));
      shat_[i] += scale * sum + g * v_[i];
      v_[i] += a * sum;
    }
    m_step_(shat_, theta_);
  }

  const S* statistic() const { return shat_; }  // Shat_k
  const S* params() const { return theta_; }    // T(Shat_k), broadcast with Shat_k
  const S* control_variate() const { return v_; }
  int dim() const { return dim_; }
  // The exact sums of a partial aggregate: the round's sum of Q(Delta_c),
  // and the initial exchange's sum of V_{0,c} / n; after adding to the
  // latter, refresh_initial() sets V_0 from it.
  ExactSumArray& round_sum() { return sum_; }
  ExactSumArray& initial_sum() { return v0_sum_; }
  void refresh_initial() {
    for (int i = 0; i < dim_; ++i) v_[i] = static_cast<S>(v0_sum_.value(static_cast<size_t>(i)));
  }
  // Restore from storage: Shat_k and V_k (theta_k = T(Shat_k) is recomputed).
  void restore(const S* shat, const S* v) {
    std::memcpy(shat_, shat, sizeof(S) * dim_);
    std::memcpy(v_, v, sizeof(S) * dim_);
    m_step_(shat_, theta_);
  }

 private:
  int dim_ = 0;
  MStep m_step_{};
  uint32_t n_ = 0;
  EmHyper<S> hyper_{};
  S alpha_ = 0;
  S* shat_ = nullptr;
  S* v_ = nullptr;
  S* theta_ = nullptr;
  S* msg_ = nullptr;
  ExactSumArray sum_;
  ExactSumArray v0_sum_;
};

}  // namespace fedrt::algorithms
