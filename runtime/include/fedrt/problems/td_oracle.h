#pragma once
// TdOracle: agent c's stochastic oracle for federated TD(0) with linear
// features (docs/algorithms.md 1.2), in fixed arena memory. A sample is
// Z = (s, s') ~ mu_c(s) P^pi_c(s, s'), drawn in O(1) from one alias table over
// the non-zero pairs with one 64-bit random draw. A(Z) = phi(s)(phi(s) - gamma
// phi(s'))^T is rank one and never formed: a step costs O(d).

#include <cstdint>

#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/core/types.h"

namespace fedrt::problems {

// One atom of the joint law of (s, s'), with its alias-method threshold.
template <class S>
struct TdTransition {
  uint64_t threshold;   // keep this atom when the low 32 random bits are < threshold (in [0, 2^32])
  uint32_t alias;       // otherwise use atom `alias`
  uint16_t state;       // s
  uint16_t next_state;  // s'
  S reward;             // r_c(s)
};

// Builds Vose's alias table for `weights` (non-negative, not all zero) into
// `out` (size n). Scratch memory comes from `arena` and is released.
template <class S>
Status BuildAliasTable(const double* weights, uint32_t n, TdTransition<S>* out, Arena& arena) {
  double total = 0.0;
  for (uint32_t i = 0; i < n; ++i) {
    if (!(weights[i] >= 0.0)) return Status::InvalidArgument("alias table: negative or NaN weight");
    total += weights[i];
  }
  if (!(total > 0.0)) return Status::InvalidArgument("alias table: all weights are zero");
  const size_t mark = arena.mark();
  auto scaled_r = arena.allocate<double>(n);
  auto small_r = arena.allocate<uint32_t>(n);
  auto large_r = arena.allocate<uint32_t>(n);
  if (!scaled_r.ok() || !small_r.ok() || !large_r.ok()) {
    arena.release_to(mark);
    return Status::ResourceExhausted("alias table: no scratch memory");
  }
  double* p = scaled_r->data;
  uint32_t* small = small_r->data;
  uint32_t* large = large_r->data;
  uint32_t ns = 0, nl = 0;
  for (uint32_t i = 0; i < n; ++i) {
    p[i] = weights[i] * static_cast<double>(n) / total;
    if (p[i] < 1.0) small[ns++] = i;
    else large[nl++] = i;
  }
  constexpr double kScale = 4294967296.0;  // 2^32
  auto threshold_of = [&](double q) -> uint64_t {
    if (q >= 1.0) return uint64_t(1) << 32;
    if (q <= 0.0) return 0;
    return static_cast<uint64_t>(q * kScale + 0.5);
  };
  while (ns > 0 && nl > 0) {
    const uint32_t s = small[--ns];
    const uint32_t l = large[--nl];
    out[s].threshold = threshold_of(p[s]);
    out[s].alias = l;
    p[l] = (p[l] + p[s]) - 1.0;
    if (p[l] < 1.0) small[ns++] = l;
    else large[nl++] = l;
  }
  while (nl > 0) {
    const uint32_t l = large[--nl];
    out[l].threshold = uint64_t(1) << 32;
    out[l].alias = l;
  }
  while (ns > 0) {  // only round-off leaves atoms here: they are (numerically) full
    const uint32_t s = small[--ns];
    out[s].threshold = uint64_t(1) << 32;
    out[s].alias = s;
  }
  arena.release_to(mark);
  return Status::Ok();
}

template <class S>
class TdOracle {
 public:
  TdOracle() = default;

  // Builds the oracle of one agent. phi: n_states x dim features (row-major),
  // reward: r_c(s) per state, joint: n_states x n_states weights
  // mu_c(s) P^pi_c(s, s') (row-major). Everything is copied into `arena`.
  static Result<TdOracle> create(Arena& arena, int dim, int n_states, double gamma,
                                 const double* phi, const double* reward, const double* joint) {
    if (dim <= 0 || n_states <= 0 || n_states > 65535)
      return Status::InvalidArgument("td oracle: bad dimension or state count");
    auto phi_r = arena.allocate<S>(static_cast<size_t>(n_states) * dim);
    if (!phi_r.ok()) return phi_r.status();
    for (int i = 0; i < n_states * dim; ++i) phi_r->data[i] = static_cast<S>(phi[i]);
    return create_shared(arena, dim, n_states, gamma, phi_r->data, reward, joint);
  }

  // The same over features `phi` the caller keeps alive (agents sharing one
  // feature map, as a Garnet fleet does): only the alias table is in `arena`.
  static Result<TdOracle> create_shared(Arena& arena, int dim, int n_states, double gamma, const S* phi,
                                        const double* reward, const double* joint) {
    if (dim <= 0 || n_states <= 0 || n_states > 65535)
      return Status::InvalidArgument("td oracle: bad dimension or state count");
    TdOracle o;
    o.dim_ = dim;
    o.gamma_ = static_cast<S>(gamma);
    double cutoff = 0.0;
    const uint32_t atoms = KeptAtoms(joint, n_states, &cutoff);
    if (atoms == 0) return Status::InvalidArgument("td oracle: the joint law of (s, s') is zero");
    auto atoms_r = arena.allocate<TdTransition<S>>(atoms);
    if (!atoms_r.ok()) return atoms_r.status();
    const size_t mark = arena.mark();
    auto w_r = arena.allocate<double>(atoms);
    if (!w_r.ok()) return w_r.status();
    uint32_t k = 0;
    for (int s = 0; s < n_states; ++s) {
      for (int s2 = 0; s2 < n_states; ++s2) {
        const double w = joint[s * n_states + s2];
        if (w > cutoff) {
          atoms_r->data[k].state = static_cast<uint16_t>(s);
          atoms_r->data[k].next_state = static_cast<uint16_t>(s2);
          atoms_r->data[k].reward = static_cast<S>(reward[s]);
          w_r->data[k] = w;
          ++k;
        }
      }
    }
    Status st = BuildAliasTable<S>(w_r->data, atoms, atoms_r->data, arena);
    arena.release_to(mark);
    if (!st.ok()) return st;
    o.phi_ = phi;
    o.atoms_ = atoms_r->data;
    o.n_atoms_ = atoms;
    return o;
  }

  // Atoms the oracle keeps of a joint law (n_states x n_states): weights above
  // 2^-48 of the total. Weights below are round-off (e.g. a transient state's
  // stationary mass from the eigen-solver: 1e-22 on x86-64, 1e-90 on ARM),
  // and below what 32-bit alias thresholds resolve in a table of up to 2^16
  // atoms: they get no atom, so every architecture builds the same table.
  static uint32_t KeptAtoms(const double* joint, int n_states, double* cutoff_out = nullptr) {
    double total = 0.0;
    for (int i = 0; i < n_states * n_states; ++i) total += joint[i] > 0.0 ? joint[i] : 0.0;
    const double cutoff = total * 0x1p-48;
    uint32_t atoms = 0;
    for (int i = 0; i < n_states * n_states; ++i) atoms += joint[i] > cutoff ? 1u : 0u;
    if (cutoff_out != nullptr) *cutoff_out = cutoff;
    return atoms;
  }
  // Arena bytes create_shared keeps for `atoms` atoms, and the scratch it
  // needs besides while it builds them (released when it returns).
  static constexpr size_t KeptBytes(uint32_t atoms) { return sizeof(TdTransition<S>) * atoms + Arena::kAlignment; }
  static constexpr size_t ScratchBytes(uint32_t atoms) {
    return 2 * (sizeof(double) * atoms + Arena::kAlignment) + 2 * (sizeof(uint32_t) * atoms + Arena::kAlignment);
  }

  // An oracle over tables built elsewhere (e.g. by create() on a host and
  // provisioned to a microcontroller, runtime/include/fedrt/fw/problem_image.h):
  // phi (n_states x dim) and the alias table stay owned by the caller.
  static TdOracle FromTables(int dim, S gamma, const S* phi, const TdTransition<S>* atoms, uint32_t n_atoms) {
    TdOracle o;
    o.dim_ = dim;
    o.gamma_ = gamma;
    o.phi_ = phi;
    o.atoms_ = atoms;
    o.n_atoms_ = n_atoms;
    return o;
  }

  int dim() const { return dim_; }
  uint32_t atoms() const { return n_atoms_; }
  S gamma() const { return gamma_; }
  const S* features() const { return phi_; }                    // phi, n_states x dim, row-major
  const TdTransition<S>* alias_table() const { return atoms_; }  // atoms() entries

  // Draws Z = (s, s') (one 64-bit draw).
  inline const TdTransition<S>& sample(CounterRng& rng) const {
    const uint64_t u = rng.next_u64();
    uint32_t i = static_cast<uint32_t>(((u >> 32) * n_atoms_) >> 32);
    if ((u & 0xFFFFFFFFull) >= atoms_[i].threshold) i = atoms_[i].alias;
    return atoms_[i];
  }

  // a^T b summed in one order on every architecture: even and odd
  // coordinates apart (the two lanes of a 2-vector), then added. Eigen's dot
  // follows the machine's SIMD width, so a board without double SIMD (armhf)
  // would round differently from a host; lane-wise 2-vector arithmetic is the
  // same with or without SIMD (docs/architecture.md, "Same iterates in every
  // driver"), and on SSE2 / NEON it is one packed multiply-add per pair.
  static inline S FixedOrderDot(const S* a, const S* b, int n) {
    using Pair = Eigen::Matrix<S, 2, 1>;
    Pair acc = Pair::Zero();
    int i = 0;
    for (; i + 1 < n; i += 2) acc += Eigen::Map<const Pair>(a + i).cwiseProduct(Eigen::Map<const Pair>(b + i));
    if (i < n) acc[0] += a[i] * b[i];
    return acc[0] + acc[1];
  }

  // Mean squared TD error over the atoms taken with equal weight,
  // (1/n) sum_i (phi(s_i)^T theta - gamma phi(s'_i)^T theta - r_i)^2: the
  // loss an agent reports on its own transitions (td_transitions.h), whose
  // atoms are its rows.
  double mean_squared_td_error(const S* theta) const {
    double sum = 0.0;
    for (uint32_t i = 0; i < n_atoms_; ++i) {
      const TdTransition<S>& z = atoms_[i];
      const S* ps = phi_ + static_cast<size_t>(z.state) * dim_;
      const S* pn = phi_ + static_cast<size_t>(z.next_state) * dim_;
      const double td = static_cast<double>(FixedOrderDot(ps, theta, dim_) - gamma_ * FixedOrderDot(pn, theta, dim_) - z.reward);
      sum += td * td;
    }
    return n_atoms_ > 0 ? sum / n_atoms_ : 0.0;
  }

  // One TD(0) step: theta <- theta - eta (phi(s) ((phi(s) - gamma phi(s'))^T theta - r(s)))
  // i.e. theta <- theta - eta (A(Z) theta - b(Z)) in O(d).
  template <int D>
  inline void step(VecMap<S, D>& theta, S eta, CounterRng& rng) const {
    const TdTransition<S>& z = sample(rng);
    const S* ps = phi_ + static_cast<size_t>(z.state) * dim_;
    const S* pn = phi_ + static_cast<size_t>(z.next_state) * dim_;
    const int n = D > 0 ? D : dim_;
    const S td = FixedOrderDot(ps, theta.data(), n) - gamma_ * FixedOrderDot(pn, theta.data(), n) - z.reward;
    theta.noalias() -= (eta * td) * MapVec<D>(ps, dim_);
  }

 private:
  int dim_ = 0;
  S gamma_ = 0;
  const S* phi_ = nullptr;
  const TdTransition<S>* atoms_ = nullptr;
  uint32_t n_atoms_ = 0;
};

}  // namespace fedrt::problems
