#pragma once
// ExpectedLsaOracle: the noise-free ("expected operator") oracle of agent c.
// It returns Abar_c and bbar_c exactly (docs/algorithms.md 1.1), so a step is
// theta <- theta - eta (Abar_c theta - bbar_c), deterministic, O(d^2).

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
  static Result<ExpectedLsaOracle> create(Arena& arena, int dim, const double* abar, const double* bbar) {
    if (dim <= 0) return Status::InvalidArgument("expected oracle: dimension must be positive");
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
    return o;
  }

  int dim() const { return dim_; }

  // theta <- theta - eta (Abar_c theta - bbar_c); the rng is not used.
  template <int D>
  inline void step(VecMap<S, D>& theta, S eta, CounterRng& /*rng*/) const {
    auto r = MapVec<D>(scratch_, dim_);
#if defined(FEDRT_FIRMWARE)
    // Coefficient-based product: Eigen's matrix-vector kernel keeps a heap
    // fallback for its temporary, which a firmware must not link.
    r.noalias() = MapMat<D>(abar_, dim_).lazyProduct(theta);
#else
    r.noalias() = MapMat<D>(abar_, dim_) * theta;
#endif
    r -= MapVec<D>(static_cast<const S*>(bbar_), dim_);
    theta.noalias() -= eta * r;
  }

 private:
  int dim_ = 0;
  const S* abar_ = nullptr;
  const S* bbar_ = nullptr;
  S* scratch_ = nullptr;  // A theta (oracle-owned so step() stays const for callers)
};

}  // namespace fedrt::problems
