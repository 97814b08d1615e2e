#pragma once
// The device side of SecAgg+ (protocol.h) as a pure state machine: no sockets,
// no heap of its own (mbedTLS's cipher and digest contexts allocate, peak
// 256 B: tests/secagg/device_heap_test.cc), fixed tables for up to
// kMaxNeighbours neighbours (13 KB per instance at 64). Each call consumes what the server forwarded in the previous
// round and produces this device's message; any deviation (unknown sender,
// duplicate, bad tag, out-of-range input, wrong phase) is an error and the
// device stops taking part in the round.

#include <cstddef>
#include <cstdint>

#include "fedrt/core/status.h"
#include "fedrt/secagg/protocol.h"

namespace fedrt::secagg {

class SecAggDevice {
 public:
  enum class Phase : uint8_t { kIdle, kAdvertised, kShared, kMasked, kChecked, kDone, kFailed };

  // Round 0: takes this round's secrets from `e` and returns (c_pk, s_pk).
  Status advertise(const RoundParams& p, uint32_t id, const DeviceEntropy& e, Advertise& out);
  // Round 1: `ads` are the advertisements of the neighbours that advertised.
  // Writes one ciphertext per such neighbour, Enc_{k_uv}(u, v, x_v, b_u(x_v), s_sk_u(x_v)),
  // to out[0..cap) and their number to `written`. Needs >= t advertised neighbours.
  Status share_keys(const Advertise* ads, size_t count, ShareCiphertext* out, size_t cap, size_t& written);
  // Round 2: the ciphertexts addressed to this device and the quantized input
  // x[0..d) (each < 2^bits). y = x + PRG(b_u) + sum_{v shared} (v > u ? + : -) PRG(s_uv) mod 2^32.
  Status masked_input(const ShareCiphertext* in, size_t count, const uint32_t* x, uint32_t* y);
  // Consistency check: `survivors` are the neighbours whose masked input the
  // server holds (must include this device). Writes, for each neighbour v that
  // shared with us (listed or not), tag = Poly1305_{k_uv}(ConsistencyAad(u, v,
  // survivors)) to out[0..cap).
  Status check_survivors(const uint32_t* survivors, size_t count, ConsistencyTag* out, size_t cap, size_t& written);
  // Round 3 after the check: `tags` are the neighbours' tags addressed to this
  // device (their `to` is not read: the AAD names this device). Every tag must verify against our own list (else ABORTED: the
  // server told us different survivor lists) and at least t - 1 listed
  // neighbours must have confirmed (else ABORTED: too few to trust the list);
  // then, as unmask(), our own share of b_u and for every neighbour u that
  // shared with us the share of b_u if listed, else of s_sk_u. Answers once.
  Status unmask_checked(const ConsistencyTag* tags, size_t count, UnmaskShare* out, size_t cap, size_t& written);
  // Round 3 without the check, for tests of the unmasking alone: the same
  // output as unmask_checked with `survivors` as the list (out needs k + 1
  // entries). ClientSecAgg, which every driver runs, never calls it.
  Status unmask(const uint32_t* survivors, size_t count, UnmaskShare* out, size_t cap, size_t& written);

  Phase phase() const { return phase_; }
  uint32_t id() const { return id_; }
  uint32_t neighbour_count() const { return nbr_count_; }
  const uint32_t* neighbours() const { return nbr_; }

 private:
  struct Peer {
    uint8_t c_pk[kKeyBytes];
    uint8_t s_pk[kKeyBytes];
    uint8_t channel[kKeyBytes];  // ChaCha20-Poly1305 key of the pair
    uint8_t b_share[kKeyBytes];  // our share of the peer's b
    uint8_t s_share[kKeyBytes];  // our share of the peer's s_sk
    uint8_t x;                   // our x-coordinate in the peer's sharing
    bool advertised;
    bool shared;
    bool listed;     // the server lists it as a survivor (round 3)
    bool confirmed;  // its consistency tag verified
  };
  Status fail(Status st);
  int index_of(uint32_t id) const;
  Status take_survivors(const uint32_t* survivors, size_t count);
  size_t listed_ids(uint32_t* out) const;  // the survivor list as taken, with this device
  // Seals (or, with `open`, verifies) the consistency tag from -> to under peer j's channel key.
  Status consistency_tag(uint32_t j, uint32_t from, uint32_t to, bool open, uint8_t tag[kTagBytes]) const;
  Status reveal(UnmaskShare* out, size_t cap, size_t& written);
  void wipe();

  RoundParams p_{};
  uint32_t id_ = 0;
  Phase phase_ = Phase::kIdle;
  uint8_t c_sk_[kKeyBytes] = {}, s_sk_[kKeyBytes] = {}, b_[kKeyBytes] = {}, shamir_key_[kKeyBytes] = {};
  uint32_t nbr_[kMaxNeighbours] = {};
  uint32_t nbr_count_ = 0;
  Peer peers_[kMaxNeighbours] = {};
  uint8_t own_b_share_[kKeyBytes] = {};                  // our share of our own b (x = k + 1)
  uint8_t coeff_[kMaxNeighbours * kKeyBytes] = {};  // Shamir coefficients (t - 1) x 32 bytes
};

}  // namespace fedrt::secagg
