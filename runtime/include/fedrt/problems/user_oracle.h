#pragma once
// Device oracle of a user-defined model (fedrt/user_model.h, docs/user-models.md):
//   f_c(x) = L(x; all n_c examples),  g = grad L(x; B examples j ~ U{0..n_c-1}),
// where L is the user's mean loss over a batch. Mini-batches are drawn with
// replacement from the step's generator, as the built-in oracles draw them
// (docs/algorithms.md 1.4), copied into a batch buffer carved from the arena
// at creation; batch = 0 passes all n_c examples in place. The examples stay
// in caller-owned memory. Device code: no heap, no exceptions.

#include <cstdint>
#include <cstring>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/user_model.h"

namespace fedrt::problems {

// The C callback and batch of scalar S.
template <class S>
struct UserFn;
template <>
struct UserFn<double> {
  using Fn = fedrt_loss_and_grad_fn;
  using Batch = fedrt_batch;
};
template <>
struct UserFn<float> {
  using Fn = fedrt_loss_and_grad_f32_fn;
  using Batch = fedrt_batch_f32;
};

template <class S>
class UserModelOracle {
 public:
  static constexpr bool kHasExactProx = false;
  using Fn = typename UserFn<S>::Fn;
  using Batch = typename UserFn<S>::Batch;

  UserModelOracle() = default;

  static constexpr size_t ArenaBytes(int dim, uint32_t features, uint32_t batch) {
    return sizeof(S) * (static_cast<size_t>(batch) * (features + 1u) + static_cast<size_t>(dim)) + 2 * Arena::kAlignment;
  }

  // `x` (samples x features, row-major) and `y` must outlive the oracle;
  // `batch` is the largest mini-batch gradient() will be asked for.
  static Result<UserModelOracle> create(Arena& arena, int dim, uint32_t features, uint32_t samples, const S* x,
                                        const S* y, uint32_t batch, Fn fn, void* context) {
    if (dim <= 0) return Status::InvalidArgument("user model: dimension must be positive");
    if (features == 0) return Status::InvalidArgument("user model: examples need at least one feature");
    if (samples == 0) return Status::InvalidArgument("user model: an agent needs at least one example");
    if (fn == nullptr) return Status::InvalidArgument("user model: no loss-and-gradient function");
    UserModelOracle o;
    o.dim_ = dim;
    o.features_ = features;
    o.n_ = samples;
    o.x_ = x;
    o.y_ = y;
    o.fn_ = fn;
    o.ctx_ = context;
    o.batch_cap_ = batch;
    if (batch > 0) {
      auto bx = arena.allocate<S>(static_cast<size_t>(batch) * (features + 1u));
      if (!bx.ok()) return bx.status();
      o.bx_ = bx->data;
      o.by_ = bx->data + static_cast<size_t>(batch) * features;
    }
    auto g = arena.allocate<S>(static_cast<size_t>(dim));
    if (!g.ok()) return g.status();
    o.scratch_ = g->data;
    return o;
  }

  // g = grad L(x; B examples drawn with replacement); batch = 0: all n_c.
  // A batch above the one given at creation is cut to it.
  void gradient(const S* x, S* g, uint32_t batch, CounterRng& rng) const {
    if (batch == 0) {
      const Batch b{x_, y_, n_, features_};
      (void)fn_(ctx_, x, static_cast<uint32_t>(dim_), &b, g);
      return;
    }
    const uint32_t m = batch < batch_cap_ ? batch : batch_cap_;
    for (uint32_t i = 0; i < m; ++i) {
      const uint32_t j = rng.below(n_);
      std::memcpy(bx_ + static_cast<size_t>(i) * features_, x_ + static_cast<size_t>(j) * features_,
                  sizeof(S) * features_);
      by_[i] = y_[j];
    }
    const Batch b{bx_, by_, m, features_};
    (void)fn_(ctx_, x, static_cast<uint32_t>(dim_), &b, g);
  }

  // f_c(x) = L(x; all n_c examples).
  S loss(const S* x) const {
    const Batch b{x_, y_, n_, features_};
    return fn_(ctx_, x, static_cast<uint32_t>(dim_), &b, scratch_);
  }

  // Never called (kHasExactProx is false); present so generic code compiles.
  void prox(const S* x_t, S* out) const {
    for (int k = 0; k < dim_; ++k) out[k] = x_t[k];
  }

  int dim() const { return dim_; }
  uint32_t samples() const { return n_; }

 private:
  int dim_ = 0;
  uint32_t features_ = 0, n_ = 0, batch_cap_ = 0;
  const S* x_ = nullptr;
  const S* y_ = nullptr;
  S* bx_ = nullptr;
  S* by_ = nullptr;
  S* scratch_ = nullptr;
  Fn fn_ = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace fedrt::problems
