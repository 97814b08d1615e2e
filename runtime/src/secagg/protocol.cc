// Round parameters, neighbour graph and key derivations of SecAgg+ (device code).
#include "fedrt/secagg/protocol.h"

#include <cmath>
#include <cstring>

#include "fedrt/core/little_endian.h"
#include "fedrt/core/rng.h"

namespace fedrt::secagg {

Status ValidateParams(const RoundParams& p) {
  if (p.n < 3) return Status::InvalidArgument("secure aggregation: needs at least 3 devices in a round");
  if (p.n > kMaxDevices) return Status::InvalidArgument("secure aggregation: more than 2^24 devices in a round");
  if (p.k < 2 || p.k > p.n - 1) return Status::InvalidArgument("secure aggregation: neighbours k must be in [2, n - 1]");
  if (p.k > kMaxNeighbours) return Status::InvalidArgument("secure aggregation: neighbours k above the device limit (kMaxNeighbours)");
  if (p.k != p.n - 1 && p.k % 2 != 0)
    return Status::InvalidArgument("secure aggregation: neighbours k must be even unless the graph is complete");
  if (p.t < 2 || p.t > p.k) return Status::InvalidArgument("secure aggregation: threshold t must be in [2, k]");
  // A survivor also reveals its own share of b_u: k + 1 holders of b-shares, k of s-shares.
  if (2 * p.t <= p.k + 1)
    return Status::InvalidArgument(
        "secure aggregation: threshold t must exceed (k + 1) / 2 (else a lying server could recover both masks)");
  if (p.dim < 1) return Status::InvalidArgument("secure aggregation: dimension must be positive");
  if (p.bits < 1 || p.bits > 31) return Status::InvalidArgument("secure aggregation: bits must be in [1, 31]");
  const uint64_t top = (uint64_t{1} << p.bits) - 1;
  if (static_cast<uint64_t>(p.n) * top > 0xFFFFFFFFull)
    return Status::InvalidArgument(
        "secure aggregation: n inputs of b bits can wrap Z_(2^32) (needs bits + log2 n <= 32); lower the bits or the devices per round");
  return Status::Ok();
}

void DefaultGraph(uint32_t n, uint32_t& k, uint32_t& t, double dropout, double target) {
  k = n >= 1 ? n - 1 : 0;  // complete graph unless a sparse one meets the target
  for (uint32_t c = 2; c < n - 1 && c <= kMaxNeighbours; c += 2) {
    if (UnmaskFailureBound(n, c, (c + 1) / 2 + 1, dropout) <= target) {
      k = c;
      break;
    }
  }
  if (k > kMaxNeighbours) k = kMaxNeighbours;  // n > 65 with no sparse k meeting the target
  t = (k + 1) / 2 + 1;
}

double UnmaskFailureBound(uint32_t n, uint32_t k, uint32_t t, double dropout) {
  const double q = 1.0 - dropout;
  if (n >= 1 && k >= n - 1) {  // complete graph: fails iff fewer than t of all n devices answer
    k = n;
    n = 1;
  }
  double p = 0.0;
  for (uint32_t i = 0; i < t && i <= k; ++i) {
    const double logc = std::lgamma(k + 1.0) - std::lgamma(i + 1.0) - std::lgamma(k - i + 1.0);
    const double a = i == 0 ? 0.0 : i * std::log(q);
    const double b = (k - i) == 0 ? 0.0 : (k - i) * std::log(dropout);
    if (dropout <= 0.0 && k - i > 0) continue;
    p += std::exp(logc + a + b);
  }
  const double bound = n * p;
  return bound > 1.0 ? 1.0 : bound;
}

namespace {

// A 4-round Feistel network on [0, 2^m) keyed by the graph seed, walked in
// cycles until it lands in [0, n): a permutation of the ids in O(1) memory.
struct Feistel {
  uint64_t seed;
  uint32_t half, mask, n;
  Feistel(uint64_t s, uint32_t n_) : seed(s), n(n_) {
    uint32_t m = 2;
    while ((uint64_t{1} << m) < n) ++m;
    if (m % 2) ++m;
    half = m / 2;
    mask = (1u << half) - 1u;
  }
  uint32_t f(uint32_t r, uint32_t x) const { return static_cast<uint32_t>(Mix64(seed ^ (uint64_t{r} << 40) ^ x)) & mask; }
  uint32_t enc(uint32_t x) const {
    uint32_t l = x >> half, r = x & mask;
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t nl = r;
      r = l ^ f(i, r);
      l = nl;
    }
    return l << half | r;
  }
  uint32_t dec(uint32_t y) const {
    uint32_t l = y >> half, r = y & mask;
    for (uint32_t i = 4; i-- > 0;) {
      const uint32_t nr = l;
      l = r ^ f(i, l);
      r = nr;
    }
    return l << half | r;
  }
  uint32_t forward(uint32_t x) const {
    do x = enc(x); while (x >= n);
    return x;
  }
  uint32_t backward(uint32_t y) const {
    do y = dec(y); while (y >= n);
    return y;
  }
};

}  // namespace

uint32_t Neighbours(const RoundParams& p, uint32_t id, uint32_t* out) {
  uint32_t count = 0;
  if (p.k >= p.n - 1) {
    for (uint32_t v = 0; v < p.n && count < kMaxNeighbours; ++v)
      if (v != id) out[count++] = v;
    return count;
  }
  const Feistel perm(p.graph_seed, p.n);
  const uint32_t pos = perm.forward(id);
  for (uint32_t j = 1; j <= p.k / 2; ++j) {
    out[count++] = perm.backward((pos + j) % p.n);
    out[count++] = perm.backward((pos + p.n - j) % p.n);
  }
  for (uint32_t i = 1; i < count; ++i)  // insertion sort: x-coordinates follow id order
    for (uint32_t j = i; j > 0 && out[j - 1] > out[j]; --j) {
      const uint32_t tmp = out[j];
      out[j] = out[j - 1];
      out[j - 1] = tmp;
    }
  return count;
}

uint8_t HolderX(const RoundParams& p, uint32_t owner, uint32_t holder) {
  uint32_t nb[kMaxNeighbours];
  const uint32_t c = Neighbours(p, owner, nb);
  if (holder == owner) return static_cast<uint8_t>(c + 1);
  for (uint32_t i = 0; i < c; ++i)
    if (nb[i] == holder) return static_cast<uint8_t>(i + 1);
  return 0;
}

Status DeriveKey(const RoundParams& p, const uint8_t sk[kKeyBytes], const uint8_t peer_pk[kKeyBytes], const char* label,
                 uint8_t out[kKeyBytes]) {
  uint8_t shared[kKeyBytes];
  FEDRT_TRY(X25519(sk, peer_pk, shared));
  uint8_t salt[15 + 8];
  std::memcpy(salt, "fedrt-secagg-v1", 15);
  PutLe64(salt + 15, p.round_id);
  const Status st = HkdfSha256(salt, sizeof salt, shared, sizeof shared, reinterpret_cast<const uint8_t*>(label),
                               std::strlen(label), out, kKeyBytes);
  Wipe(shared, sizeof shared);
  return st;
}

Status AddPairMask(const RoundParams& p, const uint8_t s_sk_u[kKeyBytes], const uint8_t s_pk_v[kKeyBytes], int sign,
                   uint32_t* y) {
  uint8_t key[kKeyBytes];
  FEDRT_TRY(DeriveKey(p, s_sk_u, s_pk_v, "fedrt pairwise mask", key));
  static const uint8_t kNonce[kNonceBytes] = {'f', 'e', 'd', 'r', 't', '-', 'p', 'a', 'i', 'r', 0, 0};
  const Status st = AddKeystreamWords(key, kNonce, sign, y, p.dim);
  Wipe(key, sizeof key);
  return st;
}

Status AddSelfMask(const RoundParams& p, const uint8_t b[kKeyBytes], int sign, uint32_t* y) {
  static const uint8_t kNonce[kNonceBytes] = {'f', 'e', 'd', 'r', 't', '-', 's', 'e', 'l', 'f', 0, 0};
  return AddKeystreamWords(b, kNonce, sign, y, p.dim);
}

void ShareNonce(uint32_t from, uint32_t to, uint8_t nonce[kNonceBytes]) {
  PutLe32(nonce, from);
  PutLe32(nonce + 4, to);
  nonce[8] = 'S';
  nonce[9] = 'H';
  nonce[10] = 'R';
  nonce[11] = 1;
}

void ShareAad(const RoundParams& p, uint32_t from, uint32_t to, uint8_t aad[16]) {
  PutLe64(aad, p.round_id);
  PutLe32(aad + 8, from);
  PutLe32(aad + 12, to);
}

void ConsistencyNonce(uint32_t from, uint32_t to, uint8_t nonce[kNonceBytes]) {
  PutLe32(nonce, from);
  PutLe32(nonce + 4, to);
  nonce[8] = 'C';  // never ShareNonce's: the same channel key seals both
  nonce[9] = 'O';
  nonce[10] = 'N';
  nonce[11] = 1;
}

size_t ConsistencyAad(const RoundParams& p, uint32_t from, uint32_t to, const uint32_t* listed, size_t count,
                      uint8_t aad[kConsistencyAadBytes]) {
  std::memset(aad, 0, kConsistencyAadBytes);
  PutLe64(aad, p.round_id);
  PutLe32(aad + 8, from);
  PutLe32(aad + 12, to);
  uint32_t nf[kMaxNeighbours], nt[kMaxNeighbours];
  const uint32_t cf = Neighbours(p, from, nf), ct = Neighbours(p, to, nt);
  auto in = [](const uint32_t* a, uint32_t n, uint32_t id) {
    for (uint32_t i = 0; i < n; ++i)
      if (a[i] == id) return true;
    return false;
  };
  // D in a fixed order both ends compute from (from, to): from's neighbours, then from itself.
  size_t bit = 0;
  for (uint32_t i = 0; i <= cf; ++i) {
    const uint32_t d = i < cf ? nf[i] : from;
    if (d != to && !in(nt, ct, d)) continue;  // not in to's closed neighbourhood
    if (in(listed, static_cast<uint32_t>(count), d)) aad[16 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
    ++bit;
  }
  return 16 + (bit + 7) / 8;
}

}  // namespace fedrt::secagg
