#pragma once
// Federated TD(0) from observed transitions (docs/data.md, "TD(0)
// transitions"): agent c holds n_c rows (phi(s_i), r_i, phi(s'_i)) and its
// oracle draws one row uniformly per step, so its expected operators are the
// empirical ones
//   Abar_c = (1/n_c) sum_i phi(s_i) (phi(s_i) - gamma phi(s'_i))^T,
//   bbar_c = (1/n_c) sum_i r_i phi(s_i).
// The oracle is a TdOracle (td_oracle.h) whose "states" are the rows' two
// feature vectors, so a step is the same O(d) TD(0) step as on a Garnet MDP.
// Device code (no heap: everything in the arena).

#include <cstdint>

#include "fedrt/core/arena.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/td_oracle.h"

namespace fedrt::problems {

// Most transitions one agent holds: the oracle numbers the 2 n_c feature
// vectors with 16-bit state indices.
constexpr uint32_t kMaxTransitions = 32767;

// The oracle of one agent over n transitions. x: n rows of 2 dim features,
// phi(s_i) then phi(s'_i) (row-major); reward: r_i. Copied into `arena`.
template <class S>
Result<TdOracle<S>> TdOracleFromTransitions(Arena& arena, int dim, uint32_t n, double gamma, const double* x,
                                            const double* reward) {
  if (dim <= 0 || n == 0) return Status::InvalidArgument("td transitions: no features or no transitions");
  if (n > kMaxTransitions)
    return Status::InvalidArgument("td transitions: more than 32767 transitions on one agent");
  auto phi = arena.allocate<S>(static_cast<size_t>(2) * n * static_cast<size_t>(dim));
  if (!phi.ok()) return phi.status();
  auto atoms = arena.allocate<TdTransition<S>>(n);
  if (!atoms.ok()) return atoms.status();
  for (size_t k = 0; k < static_cast<size_t>(2) * n * static_cast<size_t>(dim); ++k) phi->data[k] = static_cast<S>(x[k]);
  // Equal weights: every atom keeps itself (threshold 2^32), one draw picks a row.
  for (uint32_t i = 0; i < n; ++i) {
    atoms->data[i].threshold = uint64_t{1} << 32;
    atoms->data[i].alias = i;
    atoms->data[i].state = static_cast<uint16_t>(2 * i);
    atoms->data[i].next_state = static_cast<uint16_t>(2 * i + 1);
    atoms->data[i].reward = static_cast<S>(reward[i]);
  }
  return TdOracle<S>::FromTables(dim, static_cast<S>(gamma), phi->data, atoms->data, n);
}

}  // namespace fedrt::problems
