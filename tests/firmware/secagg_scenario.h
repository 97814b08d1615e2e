#pragma once
// One device's full SecAgg+ round (device id 1 of n, DefaultGraph(n) -> k, t)
// with its k neighbours' messages made from fixed seeds on the same machine:
// their advertisements (X25519 public keys from their seeds) and the share
// ciphertexts they address to this device (sealed with the real channel key
// DeriveKey(c_sk_v, c_pk_u); share bytes from their seeds). Shared by the
// firmware bench (tests/firmware/secagg_bench.cc, costs per phase) and the
// host generator of its expected outputs (gen_secagg_expected.cc), so the
// masked output y and the unmask shares must be bit-equal on both.
// Device code: static buffers, no heap beyond mbedTLS's cipher and digest contexts.

#include <cstdint>
#include <cstring>

#include "fedrt/secagg/device.h"
#include "fedrt/secagg/protocol.h"

namespace fwsecagg {

using namespace fedrt::secagg;

constexpr uint32_t kDevice = 1;
constexpr uint32_t kBits = 16;  // n (2^16 - 1) < 2^32 for n <= 65536
constexpr uint32_t kMaxDim = 256;

enum Phase { kNeighbourSetup, kAdvertise, kShareKeys, kMaskedInput, kUnmask, kPhaseCount };
inline const char* PhaseName(int p) {
  static const char* const kNames[kPhaseCount] = {"neighbour_setup", "advertise", "share_keys", "masked_input",
                                                  "unmask"};
  return kNames[p];
}

// 128 bytes of a device's round secrets: ChaCha20 keystream of a fixed key,
// nonce = (device id, purpose).
inline fedrt::Status Secrets(uint32_t id, uint32_t purpose, uint8_t* out, size_t n) {
  static const uint8_t kKey[kKeyBytes] = {'f', 'e', 'd', 'r', 't', '-', 's', 'e', 'c', 'a', 'g', 'g',
                                          '-', 'b', 'e', 'n', 'c', 'h', 1,   2,   3,   4,   5,   6,
                                          7,   8,   9,   10,  11,  12,  13,  14};
  uint8_t nonce[kNonceBytes] = {};
  for (int i = 0; i < 4; ++i) nonce[i] = static_cast<uint8_t>(id >> (8 * i));
  nonce[4] = static_cast<uint8_t>(purpose);
  return ChaCha20Xor(kKey, nonce, 0, nullptr, out, n);
}

inline uint32_t Fnv1a(uint32_t h, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

struct Outcome {
  uint32_t k = 0, t = 0;
  uint32_t y_hash = 0;       // FNV-1a of y[0..d)
  uint32_t unmask_hash = 0;  // FNV-1a of the unmask shares (from, about, kind, x, share)
  uint32_t y0 = 0;
};

// Static buffers (one round at a time).
struct Buffers {
  SecAggDevice dev;
  Advertise ads[kMaxNeighbours];
  ShareCiphertext cts[kMaxNeighbours];      // ours out, then theirs in
  UnmaskShare shares[kMaxNeighbours + 1];
  uint32_t survivors[kMaxNeighbours + 1];
  uint32_t xy[kMaxDim];  // x, masked in place into y (masked_input allows y == x)
};

// Mark(phase) is called when a phase starts and Mark(kPhaseCount) at the end.
template <class Mark>
fedrt::Status RunRound(Buffers& b, uint32_t n, uint32_t dim, Outcome& o, Mark mark) {
  RoundParams p;
  p.round_id = (uint64_t{7} << 32) | n;
  p.graph_seed = 20260101u;
  p.n = n;
  DefaultGraph(n, p.k, p.t);
  p.dim = dim;
  p.bits = kBits;
  o.k = p.k;
  o.t = p.t;
  if (dim > kMaxDim || p.k > kMaxNeighbours) return fedrt::Status::OutOfRange("secagg scenario: d or k too large");

  // Neighbours' advertisements and channel secrets (not this device's cost).
  mark(kNeighbourSetup);
  uint32_t nbr[kMaxNeighbours];
  const uint32_t k = Neighbours(p, kDevice, nbr);
  for (uint32_t j = 0; j < k; ++j) {
    uint8_t c_sk[kKeyBytes], s_sk[kKeyBytes];
    FEDRT_TRY(Secrets(nbr[j], 1, c_sk, kKeyBytes));
    FEDRT_TRY(Secrets(nbr[j], 2, s_sk, kKeyBytes));
    b.ads[j].id = nbr[j];
    FEDRT_TRY(X25519Public(c_sk, b.ads[j].c_pk));
    FEDRT_TRY(X25519Public(s_sk, b.ads[j].s_pk));
  }

  mark(kAdvertise);
  DeviceEntropy e;
  FEDRT_TRY(Secrets(kDevice, 0, reinterpret_cast<uint8_t*>(&e), sizeof e));
  Advertise mine;
  FEDRT_TRY(b.dev.advertise(p, kDevice, e, mine));

  mark(kShareKeys);
  size_t written = 0;
  FEDRT_TRY(b.dev.share_keys(b.ads, k, b.cts, kMaxNeighbours, written));

  // The neighbours' ciphertexts to us (setup again, not timed as ours).
  mark(kNeighbourSetup);
  for (uint32_t j = 0; j < k; ++j) {
    uint8_t plain[kSharePlainBytes], c_sk[kKeyBytes], key[kKeyBytes], nonce[kNonceBytes], aad[16];
    FEDRT_TRY(Secrets(nbr[j], 1, c_sk, kKeyBytes));
    for (int i = 0; i < 4; ++i) {
      plain[i] = static_cast<uint8_t>(nbr[j] >> (8 * i));
      plain[4 + i] = static_cast<uint8_t>(kDevice >> (8 * i));
    }
    plain[8] = HolderX(p, nbr[j], kDevice);
    FEDRT_TRY(Secrets(nbr[j], 3, plain + 9, 2 * kKeyBytes));
    FEDRT_TRY(DeriveKey(p, c_sk, mine.c_pk, kShareChannelLabel, key));
    ShareNonce(nbr[j], kDevice, nonce);
    ShareAad(p, nbr[j], kDevice, aad);
    ShareCiphertext& c = b.cts[j];
    c.from = nbr[j];
    c.to = kDevice;
    FEDRT_TRY(AeadSeal(key, nonce, aad, sizeof aad, plain, kSharePlainBytes, c.ct, c.tag));
  }
  for (uint32_t i = 0; i < dim; ++i) b.xy[i] = (i * 2654435761u + n) & ((1u << kBits) - 1);

  mark(kMaskedInput);
  FEDRT_TRY(b.dev.masked_input(b.cts, k, b.xy, b.xy));

  mark(kUnmask);
  for (uint32_t j = 0; j < k; ++j) b.survivors[j] = nbr[j];
  b.survivors[k] = kDevice;
  FEDRT_TRY(b.dev.unmask(b.survivors, k + 1, b.shares, kMaxNeighbours + 1, written));
  mark(kPhaseCount);

  o.y0 = b.xy[0];
  o.y_hash = Fnv1a(2166136261u, b.xy, dim * sizeof(uint32_t));
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < written; ++i) {
    const UnmaskShare& s = b.shares[i];
    const uint8_t kind = static_cast<uint8_t>(s.kind);
    h = Fnv1a(h, &s.from, 4);
    h = Fnv1a(h, &s.about, 4);
    h = Fnv1a(h, &kind, 1);
    h = Fnv1a(h, &s.x, 1);
    h = Fnv1a(h, s.share, kKeyBytes);
  }
  o.unmask_hash = h;
  return fedrt::Status::Ok();
}

}  // namespace fwsecagg
