#pragma once
// ExpectedLsaOracle: the noise-free ("expected operator") oracle of agent c.
// It returns Abar_c and bbar_c exactly (docs/algorithms.md 1.1), so a step is
// theta <- theta - eta (Abar_c theta - bbar_c), deterministic, O(d^2).
// With noise levels (a linear system given as arrays, docs/algorithms.md
// 1.1), A_c(Z) = Abar_c + sigma_a G and b_c(Z) = bbar_c + sigma_b g with
// standard Gaussian G, g; the step only needs A_c(Z) theta - b_c(Z), which is
// Abar_c theta - bbar_c + sqrt(sigma_a^2 ||theta||^2 + sigma_b^2) e, e ~ N(0, I_d).

#include <cmath>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/core/types.h"

namespace fedrt::problems {

template <class S>
class ExpectedLsaOracle {
 public:
  ExpectedLsaOracle() = default;

  // abar: dim x dim row-major, bbar: dim. Copied into `arena`.
  static Result<ExpectedLsaOracle> create(Arena& arena, int dim, const double* abar, const double* bbar,
                                          double sigma_a = 0.0, double sigma_b = 0.0) {
    if (dim <= 0) return Status::InvalidArgument("expected oracle: dimension must be positive");
#if defined(FEDRT_FIRMWARE)
    if (sigma_a != 0.0 || sigma_b != 0.0)
      return Status::Unimplemented("a linear system with Gaussian noise is not in firmware images (noise-free only)");
#endif
    if (!(sigma_a >= 0.0) || !(sigma_b >= 0.0)) return Status::InvalidArgument("expected oracle: negative noise level");
    auto a = arena.allocate<S>(static_cast<size_t>(dim) * dim);
    if (!a.ok()) return a.status();
    auto b = arena.allocate<S>(dim);
    if (!b.ok()) return b.status();
    auto tmp = arena.allocate<S>(dim);
    if (!tmp.ok()) return tmp.status();
    for (int i = 0; i < dim * dim; ++i) a->data[i] = static_cast<S>(abar[i]);
    for (int i = 0; i < dim; ++i) b->data[i] = static_cast<S>(bbar[i]);
    ExpectedLsaOracle o;
    o.dim_ = dim;
    o.abar_ = a->data;
    o.bbar_ = b->data;
    o.scratch_ = tmp->data;
    o.sigma_a2_ = static_cast<S>(sigma_a * sigma_a);
    o.sigma_b2_ = static_cast<S>(sigma_b * sigma_b);
    o.noisy_ = sigma_a != 0.0 || sigma_b != 0.0;
    return o;
  }

  int dim() const { return dim_; }

  // theta <- theta - eta (A_c(Z) theta - b_c(Z)); the rng is used only with noise.
  template <int D>
  inline void step(VecMap<S, D>& theta, S eta, CounterRng& rng) const {
    auto r = MapVec<D>(scratch_, dim_);
#if !defined(FEDRT_FIRMWARE)
    const S scale = noisy_ ? std::sqrt(sigma_a2_ * theta.squaredNorm() + sigma_b2_) : S(0);
#endif
#if defined(FEDRT_FIRMWARE)
    // Coefficient-based product: Eigen's matrix-vector kernel keeps a heap
    // fallback for its temporary, which a firmware must not link.
    r.noalias() = MapMat<D>(abar_, dim_).lazyProduct(theta);
#else
    r.noalias() = MapMat<D>(abar_, dim_) * theta;
#endif
    r -= MapVec<D>(static_cast<const S*>(bbar_), dim_);
#if !defined(FEDRT_FIRMWARE)
    if (noisy_) AddGaussian(scratch_, dim_, scale, rng);
#else
    (void)rng;
#endif
    theta.noalias() -= eta * r;
  }

  bool noisy() const { return noisy_; }

 private:
  int dim_ = 0;
  const S* abar_ = nullptr;
  const S* bbar_ = nullptr;
  S* scratch_ = nullptr;  // A theta (oracle-owned so step() stays const for callers)
  S sigma_a2_ = 0, sigma_b2_ = 0;
  bool noisy_ = false;

#if !defined(FEDRT_FIRMWARE)
  // r_i += scale * e_i, e_i standard normal by Box-Muller (two per pair of uniforms).
  static void AddGaussian(S* r, int n, S scale, CounterRng& rng) {
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    for (int i = 0; i < n; i += 2) {
      const double u1 = 1.0 - rng.uniform();  // (0, 1]
      const double u2 = rng.uniform();
      const double rad = std::sqrt(-2.0 * std::log(u1));
      r[i] += scale * static_cast<S>(rad * std::cos(kTwoPi * u2));
      if (i + 1 < n) r[i + 1] += scale * static_cast<S>(rad * std::sin(kTwoPi * u2));
    }
  }
#endif
};

}  // namespace fedrt::problems
