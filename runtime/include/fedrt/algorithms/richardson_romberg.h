#pragma once
// Federated Richardson-Romberg extrapolation (docs/algorithms.md 3, Fed-RR talk):
// two chains of the same algorithm with steps gamma and 2 gamma run on the same
// agents every round; after a burn-in of b rounds the server keeps the
// Polyak-Ruppert averages xbar_gamma, xbar_2gamma of the global iterates and
// outputs x_RR = 2 xbar_gamma - xbar_2gamma (bias O(gamma^2 H^2 + gamma^{3/2} H)).
// Server-side bookkeeping only; the chains are ordinary client/server pairs.

#include <cstdint>

#include "fedrt/core/arena.h"
#include "fedrt/core/status.h"

namespace fedrt::algorithms {

template <class S>
class RichardsonRomberg {
 public:
  RichardsonRomberg() = default;

  static Result<RichardsonRomberg> create(Arena& arena, int dim, uint32_t burn_in) {
    if (dim <= 0) return Status::InvalidArgument("richardson-romberg: dimension must be positive");
    auto buf = arena.allocate<S>(3 * static_cast<size_t>(dim));
    if (!buf.ok()) return buf.status();
    RichardsonRomberg r;
    r.dim_ = dim;
    r.burn_in_ = burn_in;
    r.avg_gamma_ = buf->data;
    r.avg_2gamma_ = buf->data + dim;
    r.out_ = buf->data + 2 * dim;
    return r;
  }

  // Global iterates x_gamma^{(t)}, x_2gamma^{(t)} after round t (t = 1, 2, ...).
  // Rounds t > burn_in enter the running averages; before that, output() is
  // the plain extrapolation 2 x_gamma^{(t)} - x_2gamma^{(t)}.
  void observe(uint32_t round, const S* x_gamma, const S* x_2gamma) {
    if (round > burn_in_) {
      ++count_;
      const S w = S(1) / static_cast<S>(count_);
      for (int i = 0; i < dim_; ++i) {
        avg_gamma_[i] += w * (x_gamma[i] - avg_gamma_[i]);
        avg_2gamma_[i] += w * (x_2gamma[i] - avg_2gamma_[i]);
      }
      for (int i = 0; i < dim_; ++i) out_[i] = S(2) * avg_gamma_[i] - avg_2gamma_[i];
    } else {
      for (int i = 0; i < dim_; ++i) out_[i] = S(2) * x_gamma[i] - x_2gamma[i];
    }
  }

  // Restore from storage: the averages and the number of rounds in them.
  void restore(uint32_t averaged, const S* avg_gamma, const S* avg_2gamma, const S* output) {
    count_ = averaged;
    for (int i = 0; i < dim_; ++i) {
      avg_gamma_[i] = avg_gamma[i];
      avg_2gamma_[i] = avg_2gamma[i];
      out_[i] = output[i];
    }
  }
  static constexpr size_t ArenaBytes(int dim) { return sizeof(S) * 3 * static_cast<size_t>(dim) + Arena::kAlignment; }

  const S* output() const { return out_; }            // x_RR
  const S* average_gamma() const { return avg_gamma_; }    // xbar_gamma (valid once averaged() > 0)
  const S* average_2gamma() const { return avg_2gamma_; }  // xbar_2gamma
  uint32_t averaged() const { return count_; }

 private:
  int dim_ = 0;
  uint32_t burn_in_ = 0;
  uint32_t count_ = 0;
  S* avg_gamma_ = nullptr;
  S* avg_2gamma_ = nullptr;
  S* out_ = nullptr;
};

}  // namespace fedrt::algorithms
