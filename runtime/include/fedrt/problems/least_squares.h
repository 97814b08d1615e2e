#pragma once
// Device oracle of agent c's least-squares objective (docs/algorithms.md 1.4),
// ridge when l2 > 0, with z_j = (a_j, 1) when it carries an intercept
// (z_j = a_j otherwise):
//   f_c(x) = (1/(2 n_c)) sum_j (z_j^T x - y_j)^2 + (l2/2) ||x||^2,
//   grad f_c(x) = Abar_c x - bbar_c,
//   Abar_c = (1/n_c) sum_j z_j z_j^T + l2 I,  bbar_c = (1/n_c) sum_j y_j z_j.
// Stochastic gradients average B samples drawn uniformly with replacement, so
// E[g] = grad f_c(x) exactly. Fixed memory: Abar_c, bbar_c (and the Cholesky
// factor of Abar_c + mu I for the exact prox) live in the caller's arena; the
// data (n_c rows of p = d - intercept features, row-major) and y_c stay in
// caller-owned memory.

#include <cmath>
#include <cstdint>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::problems {

// Largest d for which the host keeps Abar_c (d x d) per agent; above it the
// oracle is matrix-free: full gradients sum over the samples, O(n_c d).
constexpr int kDenseLeastSquaresMaxDim = 2048;

template <class S>
class LeastSquaresOracle {
 public:
  static constexpr bool kHasExactProx = true;

  LeastSquaresOracle() = default;

  // The matrix-free oracle of the same f_c (no Abar_c, no arena memory, no
  // exact prox): grad f_c(x) = (1/n_c) sum_j z_j (z_j^T x - y_j) + l2 x.
  static Result<LeastSquaresOracle> CreateMatrixFree(int dim, uint32_t samples, const S* x, const S* y, S l2,
                                                     bool intercept) {
    if (dim <= (intercept ? 1 : 0)) return Status::InvalidArgument("least squares: dimension must be positive");
    if (samples == 0) return Status::InvalidArgument("least squares: an agent needs at least one sample");
    if (!(l2 >= S(0))) return Status::InvalidArgument("least squares: l2 weight must be >= 0");
    LeastSquaresOracle o;
    o.dim_ = dim;
    o.p_ = dim - (intercept ? 1 : 0);
    o.n_ = samples;
    o.x_ = x;
    o.y_ = y;
    o.l2_ = l2;
    return o;
  }

  // Precomputes Abar_c, bbar_c; when prox_mu > 0 also the Cholesky factor L of
  // Abar_c + mu I (for prox()). `dim` is d; with `intercept` the rows of `x`
  // hold d - 1 features. `x` and `y` must outlive the oracle.
  static Result<LeastSquaresOracle> create(Arena& arena, int dim, uint32_t samples, const S* x, const S* y,
                                           S prox_mu = S(0), S l2 = S(0), bool intercept = false) {
    if (dim <= (intercept ? 1 : 0)) return Status::InvalidArgument("least squares: dimension must be positive");
    if (samples == 0) return Status::InvalidArgument("least squares: an agent needs at least one sample");
    if (!(l2 >= S(0))) return Status::InvalidArgument("least squares: l2 weight must be >= 0");
    const size_t d = static_cast<size_t>(dim);
    auto buf = arena.allocate<S>(d * d + d + (prox_mu > S(0) ? d * d : 0));
    if (!buf.ok()) return buf.status();
    LeastSquaresOracle o;
    o.dim_ = dim;
    o.p_ = dim - (intercept ? 1 : 0);
    o.n_ = samples;
    o.x_ = x;
    o.y_ = y;
    o.l2_ = l2;
    o.abar_ = buf->data;
    o.bbar_ = buf->data + d * d;
    const S inv_n = S(1) / static_cast<S>(samples);
    const size_t p = static_cast<size_t>(o.p_);
    for (uint32_t j = 0; j < samples; ++j) {
      const S* a = x + static_cast<size_t>(j) * p;
      for (size_t r = 0; r < d; ++r) {
        const S ar = r < p ? a[r] : S(1);
        o.bbar_[r] += inv_n * ar * y[j];
        for (size_t k = 0; k < d; ++k) o.abar_[r * d + k] += inv_n * ar * (k < p ? a[k] : S(1));
      }
    }
    if (l2 > S(0))
      for (size_t r = 0; r < d; ++r) o.abar_[r * d + r] += l2;
    if (prox_mu > S(0)) {
      o.mu_ = prox_mu;
      o.chol_ = buf->data + d * d + d;
      // Cholesky of Abar + mu I (symmetric positive definite since mu > 0).
      for (size_t r = 0; r < d; ++r) {
        for (size_t k = 0; k <= r; ++k) {
          S s = o.abar_[r * d + k] + (r == k ? prox_mu : S(0));
          for (size_t m = 0; m < k; ++m) s -= o.chol_[r * d + m] * o.chol_[k * d + m];
          if (r == k) {
            if (!(s > S(0))) return Status::FailedPrecondition("least squares: Abar_c + mu I is not positive definite");
            o.chol_[r * d + r] = std::sqrt(s);
          } else {
            o.chol_[r * d + k] = s / o.chol_[k * d + k];
          }
        }
      }
    }
    return o;
  }

  // g = (1/B) sum_{j in batch} z_j (z_j^T x - y_j) + l2 x, j ~ U{0..n_c-1};
  // batch = 0 gives the full gradient Abar_c x - bbar_c.
  void gradient(const S* x, S* g, uint32_t batch, CounterRng& rng) const {
    const int d = dim_, p = p_;
    if (batch == 0 && abar_ == nullptr) {  // matrix-free: every sample once
      for (int r = 0; r < d; ++r) g[r] = l2_ > S(0) ? l2_ * x[r] : S(0);
      const S inv_n = S(1) / static_cast<S>(n_);
      for (uint32_t j = 0; j < n_; ++j) {
        const S* a = x_ + static_cast<size_t>(j) * p;
        S res = -y_[j];
        for (int k = 0; k < p; ++k) res += a[k] * x[k];
        if (p < d) res += x[p];
        res *= inv_n;
        for (int k = 0; k < p; ++k) g[k] += res * a[k];
        if (p < d) g[p] += res;
      }
      return;
    }
    if (batch == 0) {
      for (int r = 0; r < d; ++r) {
        S s = -bbar_[r];
        const S* row = abar_ + static_cast<size_t>(r) * d;
        for (int k = 0; k < d; ++k) s += row[k] * x[k];
        g[r] = s;
      }
      return;
    }
    for (int r = 0; r < d; ++r) g[r] = l2_ > S(0) ? l2_ * x[r] : S(0);
    const S inv_b = S(1) / static_cast<S>(batch);
    for (uint32_t b = 0; b < batch; ++b) {
      const uint32_t j = rng.below(n_);
      const S* a = x_ + static_cast<size_t>(j) * p;
      S res = -y_[j];
      for (int k = 0; k < p; ++k) res += a[k] * x[k];
      if (p < d) res += x[p];
      res *= inv_b;
      for (int k = 0; k < p; ++k) g[k] += res * a[k];
      if (p < d) g[p] += res;
    }
  }

  // f_c(x) = (1/(2 n_c)) sum_j (z_j^T x - y_j)^2 + (l2/2) ||x||^2 over all n_c samples.
  S loss(const S* x) const {
    S sum = S(0);
    for (uint32_t j = 0; j < n_; ++j) {
      const S* a = x_ + static_cast<size_t>(j) * p_;
      S r = -y_[j];
      for (int k = 0; k < p_; ++k) r += a[k] * x[k];
      if (p_ < dim_) r += x[p_];
      sum += r * r;
    }
    if (!(l2_ > S(0))) return sum / (S(2) * static_cast<S>(n_));
    S reg = S(0);
    for (int k = 0; k < dim_; ++k) reg += x[k] * x[k];
    return sum / (S(2) * static_cast<S>(n_)) + l2_ / S(2) * reg;
  }

  // Exact proximal point: out = argmin_x f_c(x) + (mu/2)||x - x_t||^2
  //                           = (Abar_c + mu I)^{-1} (bbar_c + mu x_t).
  // Needs prox_mu > 0 at create(); `out` must not alias x_t.
  void prox(const S* x_t, S* out) const {
    const int d = dim_;
    for (int r = 0; r < d; ++r) {  // forward: L z = rhs
      S s = bbar_[r] + mu_ * x_t[r];
      for (int k = 0; k < r; ++k) s -= chol_[static_cast<size_t>(r) * d + k] * out[k];
      out[r] = s / chol_[static_cast<size_t>(r) * d + r];
    }
    for (int r = d - 1; r >= 0; --r) {  // backward: L^T x = z
      S s = out[r];
      for (int k = r + 1; k < d; ++k) s -= chol_[static_cast<size_t>(k) * d + r] * out[k];
      out[r] = s / chol_[static_cast<size_t>(r) * d + r];
    }
  }

  bool has_prox() const { return chol_ != nullptr; }
  bool matrix_free() const { return abar_ == nullptr; }
  int dim() const { return dim_; }
  uint32_t samples() const { return n_; }
  const S* abar() const { return abar_; }  // Abar_c, d x d row-major (nullptr when matrix-free)
  const S* bbar() const { return bbar_; }  // bbar_c (nullptr when matrix-free)

 private:
  int dim_ = 0, p_ = 0;  // d, features per row (d - intercept)
  uint32_t n_ = 0;
  const S* x_ = nullptr;
  const S* y_ = nullptr;
  S* abar_ = nullptr;
  S* bbar_ = nullptr;
  S* chol_ = nullptr;
  S mu_ = S(0);
  S l2_ = S(0);
};

}  // namespace fedrt::problems
