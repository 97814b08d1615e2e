#pragma once
// A device's share of distributed DP (docs/privacy-distributed.md): its
// clipped dx rotated, scaled by 1/gamma_t, rounded within the norm bound,
// noised with N_Z(0, s2) and reduced mod 2^b (privacy/ddg_codec.h). The
// noise bits come from the device's entropy, or under the task's test seed
// from a counter stream keyed by (test_seed, algorithm, run, agent, round).
// Device code: no heap (work: d_pad doubles, ints: d_pad integers).

#include <cstdint>

#include "fedrt/core/status.h"
#include "fedrt/privacy/ddg_codec.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/protocol/noise_bits.h"
#include "fedrt/task/task.h"

namespace fedrt::protocol {

// ints <- Q(R dx / gamma_t) + N_Z(0, s2) mod 2^b for announcement `a` of a
// secure round with a.secagg.n sampled devices; dx has d coordinates.
template <class S>
Status EncodeDistributed(const task::Task& task, uint32_t algorithm, uint32_t run, uint32_t agent,
                         const Announcement& a, uint32_t d, const S* dx, EntropyFn entropy, void* entropy_ctx,
                         double* work, uint32_t* ints) {
  if (!a.secagg.enabled)
    return Status::InvalidArgument("announcement: distributed DP needs a secure round (the noise is the devices')");
  const task::PrivacySpec& p = task.privacy;
  privacy::DdgRound r;
  const char* why = privacy::DdgPlan(p.noise_multiplier, p.clip, p.quorum_ppm, p.device_variance, a.secagg.n, d,
                                     task.compression.quantizer.bits, r);
  if (why != nullptr) return Status::InvalidArgument(why);
  NoiseBits bits;
  if (p.has_test_seed) {
    bits.use_counter(privacy::DdgTestNoiseKey(p.test_seed, algorithm, run, agent, a.id.round));
  } else {
    FEDRT_TRY(bits.use_entropy(entropy, entropy_ctx, a.secagg.round_id, a.secagg.id));
  }
  const uint64_t seed = privacy::DdgRotationSeed(task.seed, algorithm, run, a.id.round);
  FEDRT_TRY(privacy::DdgEncode(dx, r, seed, bits, work, ints));
  if (bits.failed()) return Status::Internal("distributed DP: the noise keystream failed");
  return Status::Ok();
}

}  // namespace fedrt::protocol
