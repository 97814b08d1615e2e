// The simulator's device secrets (secagg/simulated_entropy.h).
#include "fedrt/secagg/simulated_entropy.h"

#include <algorithm>

#include "fedrt/secagg/crypto.h"

namespace fedrt::secagg {

DeviceEntropy SimulatedEntropy(uint64_t entropy_seed, uint64_t round_id, uint32_t id) {
  uint8_t ikm[20];
  for (int i = 0; i < 8; ++i) ikm[i] = static_cast<uint8_t>(entropy_seed >> (8 * i));
  for (int i = 0; i < 8; ++i) ikm[8 + i] = static_cast<uint8_t>(round_id >> (8 * i));
  for (int i = 0; i < 4; ++i) ikm[16 + i] = static_cast<uint8_t>(id >> (8 * i));
  static const uint8_t kSalt[] = "fedrt simulated device entropy";
  DeviceEntropy e;
  uint8_t okm[sizeof(DeviceEntropy)];
  const Status st = HkdfSha256(kSalt, sizeof kSalt - 1, ikm, sizeof ikm, nullptr, 0, okm, sizeof okm);
  (void)st;  // cannot fail: fixed, valid lengths
  std::copy(okm, okm + kKeyBytes, e.c_sk);
  std::copy(okm + kKeyBytes, okm + 2 * kKeyBytes, e.s_sk);
  std::copy(okm + 2 * kKeyBytes, okm + 3 * kKeyBytes, e.b);
  std::copy(okm + 3 * kKeyBytes, okm + 4 * kKeyBytes, e.shamir);
  return e;
}

}  // namespace fedrt::secagg
