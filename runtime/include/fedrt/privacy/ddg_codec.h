#pragma once
// A device's update through the distributed discrete Gaussian mechanism and
// back (docs/privacy-distributed.md, "Distributed DP under SecAgg+"). Device:
//   x = clipped update (d values) -> z = H D (x, 0) / sqrt(d_pad) / gamma
//   -> r = conditional rounding of z (||r||^2 <= Delta^2)
//   -> r + N_Z(0, s2) per coordinate -> mod 2^b: the SecAgg+ input.
// Server, from the unmasked sum S of the survivors' inputs:
//   S mod 2^b read in (-2^(b-1), 2^(b-1)) -> gamma S -> D H (gamma S) / sqrt(d_pad)
//   -> its first d values: the sum of the survivors' updates plus their noise.
// Device code: header-only, caller buffers of d_pad values, no heap.

#include <cstdint>

#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/privacy/conditional_rounding.h"
#include "fedrt/privacy/ddg_params.h"
#include "fedrt/privacy/discrete_gaussian.h"
#include "fedrt/privacy/hadamard_rotation.h"

namespace fedrt::privacy {

// The round's public rotation seed: known to every device and the server.
inline uint64_t DdgRotationSeed(uint64_t task_seed, uint32_t algorithm, uint32_t run, uint32_t round) {
  return RngKey(task_seed, run, algorithm, round, RngStream::kDdgRotation);
}

// Under privacy.test_seed only (NOT private): the key of device `agent`'s
// rounding and noise draws, the same in every driver.
inline uint64_t DdgTestNoiseKey(uint32_t test_seed, uint32_t algorithm, uint32_t run, uint32_t agent, uint32_t round) {
  return RngKey(Mix64(test_seed ^ (0xD06A5ull + algorithm)), run, agent, round, RngStream::kDdgTestNoise);
}

// out[0..d_pad) = (conditional rounding of H D (x, 0) / (sqrt(d_pad) gamma)
// + N_Z(0, s2)) mod 2^bits; work holds d_pad doubles. The uniforms of the
// rounding and the noise come from `bits` (the device's own entropy).
template <class S, class Bits>
inline Status DdgEncode(const S* x, const DdgRound& r, uint64_t rotation_seed, Bits& bits, double* work,
                        uint32_t* out) {
  Rotate(x, r.d, r.d_pad, rotation_seed, work);
  for (uint32_t i = 0; i < r.d_pad; ++i) work[i] /= r.gamma;
  int32_t* rounded = reinterpret_cast<int32_t*>(out);  // same size and alignment; read before overwritten
  FEDRT_TRY(ConditionalRound(work, r.d_pad, r.bound_sq, bits, rounded));
  const uint32_t mask = (1u << r.bits) - 1u;
  for (uint32_t i = 0; i < r.d_pad; ++i) {
    const int64_t v = static_cast<int64_t>(rounded[i]) + DiscreteGaussian(bits, r.s2);
    out[i] = static_cast<uint32_t>(static_cast<uint64_t>(v)) & mask;
  }
  return Status::Ok();
}

// The survivors' sum in real units: out[0..d) from the unmasked sum[0..d_pad)
// (taken mod 2^bits); work holds d_pad doubles.
inline void DdgDecode(const uint32_t* sum, const DdgRound& r, uint64_t rotation_seed, double* work, double* out) {
  const uint32_t mask = (1u << r.bits) - 1u, half = 1u << (r.bits - 1);
  for (uint32_t i = 0; i < r.d_pad; ++i) {
    const uint32_t s = sum[i] & mask;
    const int64_t v = s >= half ? static_cast<int64_t>(s) - (static_cast<int64_t>(1) << r.bits) : static_cast<int64_t>(s);
    work[i] = r.gamma * static_cast<double>(v);
  }
  Unrotate(work, r.d_pad, rotation_seed);
  for (uint32_t i = 0; i < r.d; ++i) out[i] = work[i];
}

}  // namespace fedrt::privacy
