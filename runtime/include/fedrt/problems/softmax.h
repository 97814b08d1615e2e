#pragma once
// Device oracle of agent c's L2-regularised multinomial (softmax) logistic
// objective (docs/data.md, "Models"). K classes, p features, z_j = (a_j, 1)
// with an intercept (z_j = a_j without), P = p + intercept, and x stored
// class-major: x = (w_0, ..., w_{K-1}), w_k in R^P, d = K P:
//   f_c(x) = (1/n_c) sum_j [log sum_k exp(w_k^T z_j) - w_{y_j}^T z_j] + (lambda/2)||x||^2,
//   grad_{w_k} f_c(x) = (1/n_c) sum_j (softmax_k(W z_j) - [y_j = k]) z_j + lambda w_k,
// with labels y_j in {0, ..., K-1} (stored as doubles). Stochastic gradients
// average B samples drawn uniformly with replacement (unbiased). The data stay
// in caller-owned memory; the arena holds the K logits of one example.

#include <cmath>
#include <cstdint>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::problems {

template <class S>
class SoftmaxOracle {
 public:
  static constexpr bool kHasExactProx = false;
  static constexpr uint32_t kMaxClasses = 1024;

  SoftmaxOracle() = default;

  // `x` (n_c x p, row-major) and labels `y` (integers 0..K-1) must outlive the
  // oracle; the K-scalar workspace comes from `arena`.
  static Result<SoftmaxOracle> create(Arena& arena, int features, uint32_t classes, bool intercept, uint32_t samples,
                                      const S* x, const S* y, S l2) {
    if (features <= 0) return Status::InvalidArgument("softmax: the feature count must be positive");
    if (classes < 2 || classes > kMaxClasses) return Status::InvalidArgument("softmax: classes must be in 2..1024");
    if (samples == 0) return Status::InvalidArgument("softmax: an agent needs at least one sample");
    if (!(l2 > S(0))) return Status::InvalidArgument("softmax: l2 must be > 0 (softmax weights are unbounded without it)");
    for (uint32_t j = 0; j < samples; ++j)
      if (!(y[j] >= S(0) && y[j] < static_cast<S>(classes) && y[j] == static_cast<S>(static_cast<uint32_t>(y[j]))))
        return Status::InvalidArgument("softmax: a label is not a class index 0..K-1");
    auto w = arena.allocate<S>(classes);
    if (!w.ok()) return w.status();
    SoftmaxOracle o;
    o.p_ = features;
    o.k_ = classes;
    o.stride_ = features + (intercept ? 1 : 0);
    o.intercept_ = intercept;
    o.n_ = samples;
    o.x_ = x;
    o.y_ = y;
    o.l2_ = l2;
    o.logits_ = w->data;
    return o;
  }

  // g = (1/B) sum_{j in batch} (softmax(W z_j) - e_{y_j}) (x) z_j + lambda x, j ~ U{0..n_c-1};
  // batch = 0 sums over all n_c samples (full gradient).
  void gradient(const S* x, S* g, uint32_t batch, CounterRng& rng) const {
    const int d = dim();
    for (int i = 0; i < d; ++i) g[i] = l2_ * x[i];
    const uint32_t m = batch == 0 ? n_ : batch;
    const S inv_m = S(1) / static_cast<S>(m);
    for (uint32_t b = 0; b < m; ++b) {
      const uint32_t j = batch == 0 ? b : rng.below(n_);
      const S* a = x_ + static_cast<size_t>(j) * p_;
      const S sum = Probabilities(x, a);
      const uint32_t label = static_cast<uint32_t>(y_[j]);
      for (uint32_t k = 0; k < k_; ++k) {
        const S coef = (logits_[k] / sum - (k == label ? S(1) : S(0))) * inv_m;
        S* gk = g + static_cast<size_t>(k) * stride_;
        for (int i = 0; i < p_; ++i) gk[i] += coef * a[i];
        if (intercept_) gk[p_] += coef;
      }
    }
  }

  // f_c(x) over all n_c samples.
  S loss(const S* x) const {
    S total = S(0);
    for (uint32_t j = 0; j < n_; ++j) {
      const S* a = x_ + static_cast<size_t>(j) * p_;
      const S top = Logits(x, a);
      S sum = S(0);
      for (uint32_t k = 0; k < k_; ++k) sum += std::exp(logits_[k] - top);
      total += top + std::log(sum) - logits_[static_cast<uint32_t>(y_[j])];
    }
    S reg = S(0);
    for (int i = 0, d = dim(); i < d; ++i) reg += x[i] * x[i];
    return total / static_cast<S>(n_) + l2_ / S(2) * reg;
  }

  // Never called (kHasExactProx is false); present so generic code compiles.
  void prox(const S* x_t, S* out) const {
    for (int i = 0, d = dim(); i < d; ++i) out[i] = x_t[i];
  }

  int dim() const { return static_cast<int>(k_) * stride_; }
  int features() const { return p_; }
  uint32_t classes() const { return k_; }
  uint32_t samples() const { return n_; }

 private:
  // logits_[k] = w_k^T z; returns max_k logits_[k].
  S Logits(const S* x, const S* a) const {
    S top = S(0);
    for (uint32_t k = 0; k < k_; ++k) {
      const S* w = x + static_cast<size_t>(k) * stride_;
      S z = intercept_ ? w[p_] : S(0);
      for (int i = 0; i < p_; ++i) z += w[i] * a[i];
      logits_[k] = z;
      if (k == 0 || z > top) top = z;
    }
    return top;
  }
  // logits_[k] <- exp(w_k^T z - max); returns their sum (softmax_k = logits_[k] / sum).
  S Probabilities(const S* x, const S* a) const {
    const S top = Logits(x, a);
    S sum = S(0);
    for (uint32_t k = 0; k < k_; ++k) {
      logits_[k] = std::exp(logits_[k] - top);
      sum += logits_[k];
    }
    return sum;
  }

  int p_ = 0;
  uint32_t k_ = 0;
  int stride_ = 0;
  bool intercept_ = false;
  uint32_t n_ = 0;
  const S* x_ = nullptr;
  const S* y_ = nullptr;
  S l2_ = S(0);
  S* logits_ = nullptr;  // K scalars of arena memory (a per-example workspace)
};

}  // namespace fedrt::problems
