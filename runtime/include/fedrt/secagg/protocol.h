#pragma once
// SecAgg+ (Bonawitz et al. 2017 with the sparse neighbour graph of Bell et al.
// 2020): public round parameters, messages and the derivations both sides use.
// Rounds: 0 advertise keys (c_pk, s_pk) -> 1 share keys (Shamir shares of the
// self-mask seed b_u and of s_sk_u, encrypted to each neighbour, routed by the
// server) -> 2 masked input y_u = x_u + PRG(b_u) + sum_{v in N(u)} +-PRG(s_uv)
// in Z_(2^32) -> consistency check (survivors confirm their survivor lists to
// each other) -> 3 unmasking (for each neighbour u a survivor reveals the share
// of b_u if u sent y_u, else the share of s_sk_u). The server learns sum_u x_u.
// Device code: fixed sizes, no heap, Status results.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fedrt/core/status.h"
#include "fedrt/secagg/crypto.h"

namespace fedrt::secagg {

// k of the device's fixed tables (Shamir x <= 255). SecAggDevice holds about
// 170 bytes per neighbour: a microcontroller build can lower it.
#ifndef FEDRT_SECAGG_MAX_NEIGHBOURS
#define FEDRT_SECAGG_MAX_NEIGHBOURS 64
#endif
constexpr uint32_t kMaxNeighbours = FEDRT_SECAGG_MAX_NEIGHBOURS;
static_assert(kMaxNeighbours >= 2 && kMaxNeighbours <= 254, "FEDRT_SECAGG_MAX_NEIGHBOURS must be in [2, 254]");
constexpr uint32_t kMaxDevices = 1u << 24;

struct RoundParams {
  uint64_t round_id = 0;    // binds keys, nonces and AAD to one round (e.g. run << 32 | round)
  uint64_t graph_seed = 0;  // public seed of the neighbour graph
  uint32_t n = 0;           // sampled devices, ids 0..n-1 in this round
  uint32_t k = 0;           // neighbours per device (n - 1: complete graph; else even)
  uint32_t t = 0;           // Shamir threshold among the k neighbours
  uint32_t dim = 0;         // d, length of the integer vectors
  uint32_t bits = 0;        // b of the shared-scale quantizer: inputs lie in [0, 2^b)
};

// Checks n, k, t, d and that n inputs of b bits cannot wrap Z_(2^32):
// n (2^b - 1) < 2^32, i.e. about b + log2 n <= 32.
Status ValidateParams(const RoundParams& p);

// Default graph for n devices: the smallest even k <= 64 whose unmasking
// failure bound (below) at the design dropout is <= target, else the complete
// graph (k = n - 1; n <= 65), and t = floor((k + 1) / 2) + 1: b_u has k + 1
// holders (u reveals its own share when it survives), s_sk_u has k, so no
// server, even one telling different devices different survivor lists, can
// collect t shares of both. At 20% dropout and target 1e-3: n = 10 complete
// (k = 9, t = 6: any n - t = 4 may vanish; P[failure] = 3.3e-2), n = 100
// k = 44, t = 23 (bound 8.5e-4), n = 1000 k = 54, t = 28 (bound 8.3e-4).
void DefaultGraph(uint32_t n, uint32_t& k, uint32_t& t, double dropout = 0.2, double target = 1e-3);

// Union bound on the probability that a round fails to unmask when each device
// drops independently with probability `dropout`: n P[Binomial(k, 1 - dropout) < t]
// (complete graph, k = n - 1: exactly P[Binomial(n, 1 - dropout) < t]).
double UnmaskFailureBound(uint32_t n, uint32_t k, uint32_t t, double dropout);

// Neighbours of `id` (sorted ids, excluding id): a Harary ring over a public
// pseudo-random permutation of the ids (k / 2 on each side), or every other
// device when k >= n - 1. Returns the count; out must hold kMaxNeighbours.
uint32_t Neighbours(const RoundParams& p, uint32_t id, uint32_t* out);

// Shamir x-coordinate of `holder` in `owner`'s sharing (public): holder's
// position in owner's sorted neighbour list + 1, or k + 1 for the owner's own
// share of b; 0 if holder is not a neighbour.
uint8_t HolderX(const RoundParams& p, uint32_t owner, uint32_t holder);

// ---- messages ----
struct Advertise {  // round 0, device -> server -> neighbours
  uint32_t id = 0;
  uint8_t c_pk[kKeyBytes] = {};  // X25519 key of the share channel
  uint8_t s_pk[kKeyBytes] = {};  // X25519 key of the pairwise masks
};
constexpr size_t kAdvertiseBytes = 4 + 2 * kKeyBytes;

// HKDF info of the pairwise share-channel key (ChaCha20-Poly1305).
inline constexpr char kShareChannelLabel[] = "fedrt share channel";

constexpr size_t kSharePlainBytes = 4 + 4 + 1 + 2 * kKeyBytes;  // from, to, x, share(b), share(s_sk)
struct ShareCiphertext {  // round 1, device u -> server -> neighbour v
  uint32_t from = 0, to = 0;
  uint8_t ct[kSharePlainBytes] = {};
  uint8_t tag[kTagBytes] = {};
};
constexpr size_t kShareCiphertextBytes = 8 + kSharePlainBytes + kTagBytes;

// A share ciphertext on the wire (SecAggShares / SecAggSharesIn.ciphertext):
// ct || tag, kShareWireBytes bytes; the sender and receiver travel as fields.
constexpr size_t kShareWireBytes = kSharePlainBytes + kTagBytes;
static_assert(kShareWireBytes == 89, "the decoders' messages say 89 bytes");
inline void PackShareCiphertext(const ShareCiphertext& c, uint8_t* out /* kShareWireBytes */) {
  std::memcpy(out, c.ct, kSharePlainBytes);
  std::memcpy(out + kSharePlainBytes, c.tag, kTagBytes);
}
// Inverse of PackShareCiphertext; false when `len` is not kShareWireBytes.
inline bool UnpackShareCiphertext(const void* bytes, size_t len, uint32_t from, uint32_t to, ShareCiphertext& c) {
  if (len != kShareWireBytes) return false;
  c.from = from;
  c.to = to;
  std::memcpy(c.ct, bytes, kSharePlainBytes);
  std::memcpy(c.tag, static_cast<const uint8_t*>(bytes) + kSharePlainBytes, kTagBytes);
  return true;
}

// Consistency check (between rounds 2 and 3; Bonawitz et al. 2017's
// ConsistencyCheck with pairwise MACs instead of signatures): survivor u tells
// each neighbour v that shared keys with it what it was told, tag = Poly1305 under the pair's
// channel key over ConsistencyAad (u, v and which devices of their common
// domain D_uv = ({u} + N(u)) n ({v} + N(v)) u's list names). v verifies it
// against its own list: a server that told them different things is caught.
struct ConsistencyTag {  // survivor `from` -> server -> neighbour `to`
  uint32_t from = 0, to = 0;
  uint8_t tag[kTagBytes] = {};
};
constexpr size_t kConsistencyTagBytes = 8 + kTagBytes;
constexpr size_t kConsistencyAadBytes = 16 + (kMaxNeighbours + 2 + 7) / 8;
// AAD of the tag from -> to: round id, from, to, then a bitmap over D_uv (from's
// neighbours in order, then from), bit set when `listed` (a survivor list, any
// order) names the device. Returns its length.
size_t ConsistencyAad(const RoundParams& p, uint32_t from, uint32_t to, const uint32_t* listed, size_t count,
                      uint8_t aad[kConsistencyAadBytes]);
void ConsistencyNonce(uint32_t from, uint32_t to, uint8_t nonce[kNonceBytes]);

enum class ShareKind : uint8_t { kSelfSeed = 1, kMaskKey = 2 };
struct UnmaskShare {  // round 3, survivor -> server
  uint32_t from = 0;   // the holder
  uint32_t about = 0;  // whose secret
  ShareKind kind = ShareKind::kSelfSeed;
  uint8_t x = 0;       // Shamir x-coordinate of the holder for `about`'s sharing
  uint8_t share[kKeyBytes] = {};
};
constexpr size_t kUnmaskShareBytes = 4 + 4 + 1 + 1 + kKeyBytes;

// Per-round secrets a device draws from its entropy source (a hardware RNG or
// mbedtls_ctr_drbg on devices; derived from the experiment seed in the simulator).
struct DeviceEntropy {
  uint8_t c_sk[kKeyBytes];
  uint8_t s_sk[kKeyBytes];
  uint8_t b[kKeyBytes];       // self-mask seed
  uint8_t shamir[kKeyBytes];  // key of the ChaCha20 stream of Shamir coefficients
};

// ---- derivations shared by devices and server ----
// 32-byte key = HKDF-SHA256(salt = "fedrt-secagg-v1" || round_id, IKM = X25519(sk, peer_pk), info = label).
Status DeriveKey(const RoundParams& p, const uint8_t sk[kKeyBytes], const uint8_t peer_pk[kKeyBytes], const char* label,
                 uint8_t out[kKeyBytes]);
// y += sign * PRG(s_uv) with s_uv from (s_sk_u, s_pk_v); sign = +1 if u < v else -1.
Status AddPairMask(const RoundParams& p, const uint8_t s_sk_u[kKeyBytes], const uint8_t s_pk_v[kKeyBytes], int sign,
                   uint32_t* y);
// y += sign * PRG(b).
Status AddSelfMask(const RoundParams& p, const uint8_t b[kKeyBytes], int sign, uint32_t* y);
// Nonce and AAD of the share ciphertext u -> v.
void ShareNonce(uint32_t from, uint32_t to, uint8_t nonce[kNonceBytes]);
void ShareAad(const RoundParams& p, uint32_t from, uint32_t to, uint8_t aad[16]);

}  // namespace fedrt::secagg
