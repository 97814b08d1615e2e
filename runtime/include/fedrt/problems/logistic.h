#pragma once
// Device oracle of agent c's L2-regularised logistic objective (docs/algorithms.md 1.4):
//   f_c(x) = (1/n_c) sum_j log(1 + exp(-y_j z_j^T x)) + (lambda/2)||x||^2,  y_j in {-1, +1},
//   grad f_c(x) = (1/n_c) sum_j -y_j sigma(-y_j z_j^T x) z_j + lambda x,
// with z_j = (a_j, 1) when the model carries an intercept, z_j = a_j otherwise.
// Stochastic gradients average B samples drawn uniformly with replacement
// (unbiased). The data stay in caller-owned memory; no arena memory is needed.

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#if defined(FEDRT_HOST) && defined(FEDRT_LOGISTIC_AVX2)
#include "fedrt/problems/logistic_avx2.h"
#endif

namespace fedrt::problems {

// sigma(z) = 1 / (1 + exp(-z)), evaluated without overflow.
template <class S>
inline S Sigmoid(S z) {
  if (z >= S(0)) return S(1) / (S(1) + std::exp(-z));
  const S e = std::exp(z);
  return e / (S(1) + e);
}

template <class S>
class LogisticOracle {
 public:
  static constexpr bool kHasExactProx = false;

  LogisticOracle() = default;

  // `x` (n_c rows of p = d - intercept features, row-major) and labels `y`
  // in {-1, +1} must outlive the oracle.
  static Result<LogisticOracle> create(Arena& /*arena*/, int dim, uint32_t samples, const S* x, const S* y,
                                       S l2, bool intercept = false) {
    if (dim <= (intercept ? 1 : 0)) return Status::InvalidArgument("logistic: dimension must be positive");
    if (samples == 0) return Status::InvalidArgument("logistic: an agent needs at least one sample");
    if (!(l2 >= S(0))) return Status::InvalidArgument("logistic: l2 weight must be >= 0");
    LogisticOracle o;
    o.dim_ = dim;
    o.p_ = dim - (intercept ? 1 : 0);
    o.n_ = samples;
    o.x_ = x;
    o.y_ = y;
    o.l2_ = l2;
    return o;
  }

  // g = (1/B) sum_{j in batch} -y_j sigma(-y_j z_j^T x) z_j + lambda x, j ~ U{0..n_c-1};
  // batch = 0 sums over all n_c samples (full gradient).
  void gradient(const S* x, S* g, uint32_t batch, CounterRng& rng) const {
    const int d = dim_, p = p_;
#if defined(FEDRT_HOST) && defined(FEDRT_LOGISTIC_AVX2)
    if constexpr (std::is_same<S, double>::value) {
      // The same sums, 4 samples or coordinates per instruction (row indices as int32 lanes).
      if (detail::LogisticAvx2Supported() && n_ <= 0x7FFFFFFFu) {
        const detail::LogisticRows rows{x_, y_, n_, p, p < d};
        detail::LogisticGradientAvx2(rows, l2_, x, g, batch, batch == 0 ? 0 : rng.advance(batch));
        return;
      }
    }
#endif
    for (int k = 0; k < d; ++k) g[k] = l2_ * x[k];
    const uint32_t m = batch == 0 ? n_ : batch;
    const S inv_m = S(1) / static_cast<S>(m);
    uint32_t b = 0;
#if defined(FEDRT_HOST)
    // kBlock samples at a time: their dot products are independent chains the
    // CPU overlaps, while every sum keeps its order (the same bits as one by one).
    constexpr int kBlock = 8;
    for (; b + kBlock <= m; b += kBlock) {
      uint32_t j[kBlock];
      const S* a[kBlock];
      S z[kBlock], coef[kBlock];
      for (int i = 0; i < kBlock; ++i) {
        j[i] = batch == 0 ? b + static_cast<uint32_t>(i) : rng.below(n_);
        a[i] = x_ + static_cast<size_t>(j[i]) * p;
        z[i] = S(0);
      }
      for (int k = 0; k < p; ++k)
        for (int i = 0; i < kBlock; ++i) z[i] += a[i][k] * x[k];
      for (int i = 0; i < kBlock; ++i) {
        if (p < d) z[i] += x[p];
        coef[i] = -y_[j[i]] * Sigmoid(-y_[j[i]] * z[i]) * inv_m;
      }
      for (int k = 0; k < p; ++k)
        for (int i = 0; i < kBlock; ++i) g[k] += coef[i] * a[i][k];
      if (p < d)
        for (int i = 0; i < kBlock; ++i) g[p] += coef[i];
    }
#endif
    for (; b < m; ++b) {
      const uint32_t j = batch == 0 ? b : rng.below(n_);
      const S* a = x_ + static_cast<size_t>(j) * p;
      S z = S(0);
      for (int k = 0; k < p; ++k) z += a[k] * x[k];
      if (p < d) z += x[p];
      const S coef = -y_[j] * Sigmoid(-y_[j] * z) * inv_m;
      for (int k = 0; k < p; ++k) g[k] += coef * a[k];
      if (p < d) g[p] += coef;
    }
  }

  // f_c(x) = (1/n_c) sum_j log(1 + exp(-y_j z_j^T x)) + (lambda/2)||x||^2 over all n_c samples.
  S loss(const S* x) const {
    S sum = S(0);
    for (uint32_t j = 0; j < n_; ++j) {
      const S* a = x_ + static_cast<size_t>(j) * p_;
      S z = S(0);
      for (int k = 0; k < p_; ++k) z += a[k] * x[k];
      if (p_ < dim_) z += x[p_];
      const S m = -y_[j] * z;  // log(1 + e^m) without overflow
      sum += m > S(0) ? m + std::log1p(std::exp(-m)) : std::log1p(std::exp(m));
    }
    S reg = S(0);
    for (int k = 0; k < dim_; ++k) reg += x[k] * x[k];
    return sum / static_cast<S>(n_) + l2_ / S(2) * reg;
  }

  // Never called (kHasExactProx is false); present so generic code compiles.
  void prox(const S* x_t, S* out) const {
    for (int k = 0; k < dim_; ++k) out[k] = x_t[k];
  }

  int dim() const { return dim_; }
  uint32_t samples() const { return n_; }

 private:
  int dim_ = 0, p_ = 0;  // d, features per row (d - intercept)
  uint32_t n_ = 0;
  const S* x_ = nullptr;
  const S* y_ = nullptr;
  S l2_ = S(0);
};

}  // namespace fedrt::problems
