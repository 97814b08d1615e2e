// X25519 and X25519Public of fedrt/secagg/crypto.h for the secagg fuzz target
// only, linked in place of runtime/src/secagg/x25519_sodium.cc: the same
// libsodium functions, memoised. X25519 is a pure function, and the target's
// devices draw fixed secrets, so most scalar multiplications of one execution
// repeat those of the last (they were 72 % of its time under perf). Forged
// keys from the input miss the cache and are computed as usual.
#include <sodium.h>

#include <array>
#include <cstring>
#include <unordered_map>

#include "fedrt/secagg/crypto.h"

namespace fedrt::secagg {

namespace {

using Key = std::array<uint8_t, 2 * kKeyBytes>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h;
    std::memcpy(&h, k.data(), sizeof h);  // the scalar's first bytes: uniform enough
    size_t g;
    std::memcpy(&g, k.data() + kKeyBytes, sizeof g);
    return h ^ (g * 0x9e3779b97f4a7c15ull);
  }
};
struct Entry {
  int rc;
  std::array<uint8_t, kKeyBytes> out;
};

// Bounded: cleared when full, so a long run's memory stays flat.
std::unordered_map<Key, Entry, KeyHash>& Cache() {
  static std::unordered_map<Key, Entry, KeyHash> cache;
  if (cache.size() > 4096) cache.clear();
  return cache;
}

bool SodiumReady() {
  static const bool ready = sodium_init() >= 0;
  return ready;
}

// One scalar multiplication, q = X25519(n, p) (p == nullptr: the base point).
int Mult(const uint8_t n[kKeyBytes], const uint8_t* p, uint8_t q[kKeyBytes]) {
  Key key{};
  std::memcpy(key.data(), n, kKeyBytes);
  if (p != nullptr) std::memcpy(key.data() + kKeyBytes, p, kKeyBytes);
  else key[kKeyBytes] = 9;
  auto& cache = Cache();
  auto it = cache.find(key);
  if (it == cache.end()) {
    Entry e{};
    e.rc = p != nullptr ? crypto_scalarmult_curve25519(e.out.data(), n, p)
                        : crypto_scalarmult_curve25519_base(e.out.data(), n);
    it = cache.emplace(key, e).first;
  }
  std::memcpy(q, it->second.out.data(), kKeyBytes);
  return it->second.rc;
}

}  // namespace

Status X25519(const uint8_t scalar[kKeyBytes], const uint8_t u[kKeyBytes], uint8_t out[kKeyBytes]) {
  if (!SodiumReady()) return Status::Internal("x25519: libsodium failed to initialise");
  uint8_t ub[kKeyBytes];
  std::memcpy(ub, u, kKeyBytes);
  ub[31] &= 127;  // as x25519_sodium.cc: decodeUCoordinate ignores the top bit
  if (Mult(scalar, ub, out) != 0) return Status::InvalidArgument("x25519: all-zero shared secret (low-order peer key)");
  return Status::Ok();
}

Status X25519Public(const uint8_t secret[kKeyBytes], uint8_t pub[kKeyBytes]) {
  if (!SodiumReady()) return Status::Internal("x25519: libsodium failed to initialise");
  if (Mult(secret, nullptr, pub) != 0) return Status::Internal("x25519: public key failed");
  return Status::Ok();
}

}  // namespace fedrt::secagg
