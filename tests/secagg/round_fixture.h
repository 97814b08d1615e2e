#pragma once
// Round parameters and random b-bit inputs shared by the SecAgg+ tests.
#include <cstdint>
#include <vector>

#include "fedrt/core/rng.h"
#include "fedrt/secagg/protocol.h"

namespace fedrt::secagg::testing {

// The default graph for n devices, or a sparse k-regular one
// (t = (k + 1) / 2 + 1) when k > 0: small k keeps sparse rounds fast.
inline RoundParams TestParams(uint32_t n, uint32_t dim, uint32_t bits, uint64_t round_id, uint32_t k,
                              uint64_t graph_seed) {
  RoundParams p;
  p.n = n;
  p.dim = dim;
  p.bits = bits;
  p.round_id = round_id;
  p.graph_seed = graph_seed;
  DefaultGraph(n, p.k, p.t);
  if (k > 0) {
    p.k = k;
    p.t = (k + 1) / 2 + 1;
  }
  return p;
}

// x_u for every device: uniform b-bit integers from `seed`.
struct TestInputs {
  std::vector<std::vector<uint32_t>> x;
  std::vector<const uint32_t*> ptrs;
  TestInputs(const RoundParams& p, uint64_t seed) : x(p.n) {
    CounterRng rng(seed);
    for (auto& v : x) {
      v.resize(p.dim);
      for (auto& e : v) e = static_cast<uint32_t>(rng.next_u64() >> (64 - p.bits));
      ptrs.push_back(v.data());
    }
  }
  // sum_{u in who} x_u mod 2^32.
  std::vector<uint32_t> sum(const std::vector<uint32_t>& who) const {
    std::vector<uint32_t> s(x[0].size(), 0);
    for (uint32_t u : who)
      for (size_t i = 0; i < s.size(); ++i) s[i] += x[u][i];
    return s;
  }
};

// 0..n-1.
inline std::vector<uint32_t> AllIds(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace fedrt::secagg::testing
