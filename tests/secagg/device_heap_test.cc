// Device discipline of SecAggDevice: what one device round costs in heap.
// The state machine itself uses fixed tables; mbedTLS's cipher and message
// digest contexts (ChaCha20-Poly1305, HKDF) allocate internally (X25519, the
// ref10 ladder, allocates nothing). This program counts every malloc/calloc/realloc/free
// during one full device round (k = 16 neighbours), prints the count and the
// peak, and fails if anything is left allocated afterwards (a leak) or if the
// state machine's own buffers ever come from the heap (peak above 16 KB).
// Run without sanitizers (it replaces malloc). --self-check leaks on purpose
// and must fail.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fedrt/secagg/device.h"
#include "secagg_round.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void __libc_free(void*);

static bool g_counting = false;
static long g_calls = 0;
static long g_live = 0, g_peak = 0;
static void* volatile g_leak = nullptr;

static void Track(void* p, long sign) {
  if (!g_counting || p == nullptr) return;
  g_live += sign * static_cast<long>(malloc_usable_size(p));
  g_peak = std::max(g_peak, g_live);
}
extern "C" void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  if (g_counting) ++g_calls;
  Track(p, +1);
  return p;
}
extern "C" void* calloc(size_t a, size_t b) {
  void* p = __libc_calloc(a, b);
  if (g_counting) ++g_calls;
  Track(p, +1);
  return p;
}
extern "C" void* realloc(void* q, size_t n) {
  Track(q, -1);
  void* p = __libc_realloc(q, n);
  if (g_counting) ++g_calls;
  Track(p, +1);
  return p;
}
extern "C" void free(void* p) {
  Track(p, -1);
  __libc_free(p);
}

using namespace fedrt::secagg;

int main(int argc, char** argv) {
  const bool self_check = argc > 1 && std::strcmp(argv[1], "--self-check") == 0;
  RoundParams p;
  p.n = 100;
  p.k = 16;
  p.t = 9;
  p.dim = 64;
  p.bits = 16;
  p.round_id = 3;
  p.graph_seed = 5;
  uint32_t nbr[kMaxNeighbours];
  const uint32_t k = Neighbours(p, 0, nbr);
  // Inputs prepared outside the counted region: neighbour keys and the shares they send us.
  std::vector<Advertise> ads(k);
  std::vector<DeviceEntropy> ent(k);
  for (uint32_t j = 0; j < k; ++j) {
    ent[j] = SimulatedEntropy(1, p.round_id, nbr[j]);
    ads[j].id = nbr[j];
    if (!X25519Public(ent[j].c_sk, ads[j].c_pk).ok() || !X25519Public(ent[j].s_sk, ads[j].s_pk).ok()) return 1;
  }
  const DeviceEntropy mine_e = SimulatedEntropy(1, p.round_id, 0);
  Advertise mine_pub;
  if (!X25519Public(mine_e.c_sk, mine_pub.c_pk).ok()) return 1;
  std::vector<ShareCiphertext> in(k), out(kMaxNeighbours);
  for (uint32_t j = 0; j < k; ++j) {
    uint8_t key[kKeyBytes], plain[kSharePlainBytes] = {}, nonce[kNonceBytes], aad[16];
    if (!DeriveKey(p, ent[j].c_sk, mine_pub.c_pk, kShareChannelLabel, key).ok()) return 1;
    for (int i = 0; i < 4; ++i) plain[i] = static_cast<uint8_t>(nbr[j] >> (8 * i));
    plain[8] = HolderX(p, nbr[j], 0);
    in[j].from = nbr[j];
    ShareNonce(nbr[j], 0, nonce);
    ShareAad(p, nbr[j], 0, aad);
    if (!AeadSeal(key, nonce, aad, sizeof aad, plain, kSharePlainBytes, in[j].ct, in[j].tag).ok()) return 1;
  }
  std::vector<uint32_t> x(p.dim, 7), y(p.dim), surv(nbr, nbr + k);
  surv.insert(std::upper_bound(surv.begin(), surv.end(), 0u), 0u);
  std::vector<UnmaskShare> shares(kMaxNeighbours + 1);
  static SecAggDevice dev;  // fixed tables, not on the heap
  size_t written = 0;

  g_counting = true;
  bool ok = dev.advertise(p, 0, mine_e, mine_pub).ok();
  ok = ok && dev.share_keys(ads.data(), k, out.data(), out.size(), written).ok();
  ok = ok && dev.masked_input(in.data(), k, x.data(), y.data()).ok();
  ok = ok && dev.unmask(surv.data(), surv.size(), shares.data(), shares.size(), written).ok();
  if (self_check) g_leak = std::malloc(100);  // an allocation that is never freed
  g_counting = false;

  std::printf("one device round (k = %u, d = %u): %ld heap calls (all inside mbedTLS's cipher and digest contexts), peak %ld bytes, "
              "%ld bytes left; sizeof(SecAggDevice) = %zu bytes\n",
              k, p.dim, g_calls, g_peak, g_live, sizeof(SecAggDevice));
  if (!ok) {
    std::printf("FAIL: the device round did not complete\n");
    return 1;
  }
  if (g_live != 0) {
    std::printf("FAIL: %ld bytes still allocated after the round\n", g_live);
    return 1;
  }
  if (g_peak > 16 * 1024) {
    std::printf("FAIL: heap peak %ld bytes: device buffers must not come from the heap\n", g_peak);
    return 1;
  }
  return 0;
}
