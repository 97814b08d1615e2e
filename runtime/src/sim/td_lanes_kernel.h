#pragma once
// The lane kernel of sim/td_lanes.h, written once in GCC vector extensions
// and compiled per instruction set: td_lanes.cc at the build's baseline
// (SSE2 on x86-64, NEON on aarch64) and td_lanes_avx2.cc with -mavx2 (and no
// -mfma: a fused multiply-add would round differently from the scalar kernel).
// Everything here has internal linkage, so the two compilations never merge.
//
// Layout: agent x's theta is D/4 vectors of 4 coordinates (its own order). A
// group of 4 agents computes its two dot products per step in the scalar
// kernel's order (TdOracle::FixedOrderDot: even and odd coordinates summed
// apart, pair by pair, then added): the pairs (p_{2i}, p_{2i+1}) of two agents
// sit side by side in one vector, so every addition is the scalar one. The TD
// errors of the 4 agents then share one vector, and each agent's update
// theta <- theta - (eta td) phi(s) (+ eta xi_c) is its own vector arithmetic.
// G groups run interleaved so the CPU overlaps their dependency chains.

#include <cstdint>
#include <cstring>

#include "fedrt/core/rng.h"
#include "fedrt/problems/td_block.h"

// 32-byte vectors pass between these inlined helpers only, never across the
// two compilations' boundary, so the baseline build's ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace fedrt::sim {
namespace {

typedef double V4 __attribute__((vector_size(32)));
typedef int64_t I4 __attribute__((vector_size(32)));

inline V4 Load4(const double* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store4(double* p, V4 v) { std::memcpy(p, &v, sizeof v); }

// Largest D the dynamic-dimension kernel takes (its theta copies live on the stack).
constexpr int kMaxLaneDim = 256;

// G groups of 4 blocks with the same dimension, steps and algorithm. D > 0:
// the dimension at compile time; D = 0: blocks[0]->oracle->dim() (a multiple
// of 4, at most kMaxLaneDim).
template <int D, int G, bool kControlVariate>
void LaneBlocks(problems::TdBlock<double>* const* blocks) {
  constexpr int L = 4 * G;
  constexpr int kJ = D > 0 ? D / 4 : kMaxLaneDim / 4;
  const int dim = D > 0 ? D : blocks[0]->oracle->dim();
  const int J = D > 0 ? D / 4 : dim / 4;
  const uint32_t H = blocks[0]->steps;

  V4 th[L][kJ];
  const double* exi[L];  // eta xi_c, read from memory (registers hold theta)
  const problems::TdTransition<double>* atoms[L];
  const double* phi[L];
  uint64_t n_atoms[L];
  uint64_t state[L];
  V4 gamma[G], eta[G];
  for (int x = 0; x < L; ++x) {
    const problems::TdBlock<double>& b = *blocks[x];
    for (int j = 0; j < J; ++j) th[x][j] = Load4(b.theta + 4 * j);
    exi[x] = b.eta_xi;
    atoms[x] = b.oracle->alias_table();
    phi[x] = b.oracle->features();
    n_atoms[x] = b.oracle->atoms();
    state[x] = b.key;  // CounterRng(key)'s counter; next_u64 advances it by kGolden, then mixes
  }
  for (int g = 0; g < G; ++g) {
    const problems::TdBlock<double>* const* q = blocks + 4 * g;
    gamma[g] = V4{q[0]->oracle->gamma(), q[1]->oracle->gamma(), q[2]->oracle->gamma(), q[3]->oracle->gamma()};
    eta[g] = V4{q[0]->eta, q[1]->eta, q[2]->eta, q[3]->eta};
  }

  for (uint32_t h = 0; h < H; ++h) {
    // Z_h of every agent: one 64-bit draw and its alias-table atom (TdOracle::sample).
    const double* ps[L];
    const double* pn[L];
    double reward[L];
#pragma GCC unroll 8
    for (int x = 0; x < L; ++x) {
      state[x] += CounterRng::kGolden;
      const uint64_t u = Mix64(state[x]);
      const uint32_t i = static_cast<uint32_t>(((u >> 32) * n_atoms[x]) >> 32);
      // The alias choice is a coin flip per draw: selected by a mask, not a
      // branch the CPU would mispredict about half the time.
      const uint32_t keep = 0u - static_cast<uint32_t>((u & 0xFFFFFFFFull) < atoms[x][i].threshold);
      const problems::TdTransition<double>& z = atoms[x][(i & keep) | (atoms[x][i].alias & ~keep)];
      ps[x] = phi[x] + static_cast<size_t>(z.state) * dim;
      pn[x] = phi[x] + static_cast<size_t>(z.next_state) * dim;
      reward[x] = z.reward;
    }
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) {
      V4 acc_s[2], acc_n[2];
#pragma GCC unroll 2
      for (int k = 0; k < 2; ++k) {  // agents (4g + 2k, 4g + 2k + 1) share one accumulator
        const int a = 4 * g + 2 * k, b = a + 1;
        V4 s = V4{0, 0, 0, 0}, n = V4{0, 0, 0, 0};
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
          const V4 sa = Load4(ps[a] + 4 * j) * th[a][j], sb = Load4(ps[b] + 4 * j) * th[b][j];
          const V4 na = Load4(pn[a] + 4 * j) * th[a][j], nb = Load4(pn[b] + 4 * j) * th[b][j];
          s += __builtin_shuffle(sa, sb, I4{0, 1, 4, 5});  // pairs 2j of a and of b
          n += __builtin_shuffle(na, nb, I4{0, 1, 4, 5});
          s += __builtin_shuffle(sa, sb, I4{2, 3, 6, 7});  // pairs 2j + 1
          n += __builtin_shuffle(na, nb, I4{2, 3, 6, 7});
        }
        acc_s[k] = s;
        acc_n[k] = n;
      }
      // even + odd per agent, the 4 agents of the group in lane order
      const V4 dot_s = __builtin_shuffle(acc_s[0], acc_s[1], I4{0, 2, 4, 6}) +
                       __builtin_shuffle(acc_s[0], acc_s[1], I4{1, 3, 5, 7});
      const V4 dot_n = __builtin_shuffle(acc_n[0], acc_n[1], I4{0, 2, 4, 6}) +
                       __builtin_shuffle(acc_n[0], acc_n[1], I4{1, 3, 5, 7});
      const V4 r = V4{reward[4 * g], reward[4 * g + 1], reward[4 * g + 2], reward[4 * g + 3]};
      const V4 td = (dot_s - gamma[g] * dot_n) - r;
      const V4 c = eta[g] * td;
#pragma GCC unroll 4
      for (int lane = 0; lane < 4; ++lane) {
        const int x = 4 * g + lane;
        const V4 cx = __builtin_shuffle(c, I4{lane, lane, lane, lane});
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
          th[x][j] = th[x][j] - cx * Load4(ps[x] + 4 * j);
          if constexpr (kControlVariate) th[x][j] = th[x][j] + Load4(exi[x] + 4 * j);
        }
      }
    }
  }
  for (int x = 0; x < L; ++x)
    for (int j = 0; j < J; ++j) Store4(blocks[x]->theta + 4 * j, th[x][j]);
}

// Runs 4 * groups blocks (groups 1 or 2) with this ISA's lane kernel; false
// when the dimension is not a multiple of 4 or above kMaxLaneDim.
inline bool LanesFor(problems::TdBlock<double>* const* blocks, int groups) {
  const int dim = blocks[0]->oracle->dim();
  if (dim % 4 != 0 || dim > kMaxLaneDim || (groups != 1 && groups != 2)) return false;
  const bool cv = blocks[0]->eta_xi != nullptr;
  auto run = [&](auto d) {
    constexpr int D = decltype(d)::value;
    if (groups == 2) cv ? LaneBlocks<D, 2, true>(blocks) : LaneBlocks<D, 2, false>(blocks);
    else cv ? LaneBlocks<D, 1, true>(blocks) : LaneBlocks<D, 1, false>(blocks);
  };
  switch (dim) {
    case 8: run(std::integral_constant<int, 8>{}); break;
    case 16: run(std::integral_constant<int, 16>{}); break;
    default: run(std::integral_constant<int, 0>{}); break;
  }
  return true;
}

}  // namespace
}  // namespace fedrt::sim
