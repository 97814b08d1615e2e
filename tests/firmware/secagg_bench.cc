// fedrt-fw-secagg-bench: one device's full SecAgg+ round on the Cortex-M
// (advertise, share keys to k neighbours, masked input of d = 8 and d = 256,
// unmask) for n = 10, 100, 1000 devices (k, t from DefaultGraph), with the
// neighbours' messages made on the device from fixed seeds
// (secagg_scenario.h). Run under qemu-run.sh --icount (-icount shift=0: 1 ns
// of virtual time per instruction, 40 instructions per 25 MHz SysTick tick),
// it prints instructions per phase and per round (the device's own work;
// making the neighbours' messages is reported apart), and checks that y and
// the unmask shares are bit-equal to the host's SecAggDevice
// (gen_secagg_expected.cc). Exit code 1 on a mismatch or an error.
// Argument --full: all n (default: n = 10 only).

#include <mbedtls/memory_buffer_alloc.h>

#include "mps2.h"
#include "secagg_scenario.h"

namespace {

struct Expected {
  uint32_t n, d, k, t, y_hash, unmask_hash, y0;
};
// gen_secagg_expected.cc (host, Debian's mbedTLS, SecAggDevice with 64 neighbours).
const Expected kExpected[] = {
    {10, 8, 9, 6, 0xad44d693u, 0xeefd57a1u, 0x83ce9953u},
    {10, 256, 9, 6, 0x75e8a849u, 0xeefd57a1u, 0x83ce9953u},
    {100, 8, 44, 23, 0xdda2ea93u, 0x864e9e6du, 0x993b7fc3u},
    {100, 256, 44, 23, 0x85c2377au, 0x864e9e6du, 0x993b7fc3u},
    {1000, 8, 54, 28, 0x08611358u, 0x4e9679bdu, 0x27adb297u},
    {1000, 256, 54, 28, 0xe54a5819u, 0x4e9679bdu, 0x27adb297u},
};

constexpr uint32_t kInstructionsPerTick = 40;  // -icount shift=0 at 25 MHz
alignas(8) unsigned char g_mbedtls_heap[2560];  // mbedTLS allocations (cipher contexts); the ref10 X25519 takes none
fwsecagg::Buffers g_buf;

}  // namespace

int main() {
  mbedtls_memory_buffer_alloc_init(g_mbedtls_heap, sizeof g_mbedtls_heap);
  // Without --full only n = 10 (about 1.2e9 instructions with the neighbours'
  // setup: the ctest and the footprint run); --full adds n = 100 and 1000
  // (about 1e10, minutes under QEMU: ./fedrt bench).
  const bool full = mps2_has_arg("--full");
  int failures = 0;
  for (const Expected& ex : kExpected) {
    if (!full && ex.n != 10) continue;
    uint64_t ticks[fwsecagg::kPhaseCount] = {};
    int current = -1;
    uint64_t since = 0;
    auto mark = [&](int phase) {
      const uint64_t now = mps2_ticks();
      if (current >= 0) ticks[current] += now - since;
      current = phase;
      since = now;
    };
    fwsecagg::Outcome o;
    const fedrt::Status st = fwsecagg::RunRound(g_buf, ex.n, ex.d, o, mark);
    if (!st.ok()) {
      mps2_puts("secagg_bench: n=");
      mps2_put_u32(ex.n);
      mps2_puts(" failed: ");
      mps2_puts(st.message());
      mps2_puts("\n");
      ++failures;
      continue;
    }
    uint64_t round = 0;
    for (int ph = fwsecagg::kAdvertise; ph < fwsecagg::kPhaseCount; ++ph) round += ticks[ph];
    mps2_puts("fedrt-fw-secagg-bench: n=");
    mps2_put_u32(ex.n);
    mps2_puts(" k=");
    mps2_put_u32(o.k);
    mps2_puts(" t=");
    mps2_put_u32(o.t);
    mps2_puts(" d=");
    mps2_put_u32(ex.d);
    mps2_puts(" instructions_per_round=");
    mps2_put_u64(round * kInstructionsPerTick);
    for (int ph = fwsecagg::kAdvertise; ph < fwsecagg::kPhaseCount; ++ph) {
      mps2_puts(" ");
      mps2_puts(fwsecagg::PhaseName(ph));
      mps2_puts("=");
      mps2_put_u64(ticks[ph] * kInstructionsPerTick);
    }
    mps2_puts(" (neighbour_setup=");
    mps2_put_u64(ticks[fwsecagg::kNeighbourSetup] * kInstructionsPerTick);
    mps2_puts(")");
    const bool same = o.k == ex.k && o.t == ex.t && o.y_hash == ex.y_hash && o.unmask_hash == ex.unmask_hash &&
                      o.y0 == ex.y0;
    mps2_puts(same ? " host=equal\n" : " host=DIFFERENT\n");
    if (!same) {
      mps2_puts("  y_hash=");
      mps2_put_hex32(o.y_hash);
      mps2_puts(" unmask_hash=");
      mps2_put_hex32(o.unmask_hash);
      mps2_puts(" y0=");
      mps2_put_hex32(o.y0);
      mps2_puts("\n");
      ++failures;
    }
  }
  size_t max_used = 0, max_blocks = 0;
  mbedtls_memory_buffer_alloc_max_get(&max_used, &max_blocks);
  mps2_report_u32("mbedtls_heap_hwm", static_cast<uint32_t>(max_used));
  mps2_report_u32("secagg_device_bytes", static_cast<uint32_t>(sizeof(fwsecagg::SecAggDevice)));
  return failures == 0 ? 0 : 1;
}
