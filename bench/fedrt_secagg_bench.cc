// fedrt-secagg-bench: cost of SecAgg+ per round for N = 10, 100, 1000 devices.
// Prints, per N, the graph (k, t, unmasking-failure bound at 20% dropout),
// one device's uplink and downlink bytes against the unmasked quantized
// update (d b / 8 bytes), and one device's CPU time per round (native, this
// machine: X25519 from Debian's mbedTLS dominates, ~0.75 ms CPU each, 2k + 2 per
// round). For N = 10 and 100 it also runs the whole round in process (every
// device and the server) and prints its wall time and the server's CPU time.
// CPU times are per thread (CLOCK_THREAD_CPUTIME_ID), so other load on the
// machine changes them little.
//
//   fedrt-secagg-bench [--dim 1000] [--bits 16] [--full-max 100]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fedrt/cli/parse.h"
#include "fedrt/core/rng.h"
#include "fedrt/secagg/device.h"
#include "secagg_round.h"

using namespace fedrt;
using namespace fedrt::secagg;
using Clock = std::chrono::steady_clock;

namespace {

struct DeviceCost {
  double seconds = 0.0;
  uint64_t up = 0, down = 0;
};

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double CpuSince(double t0) { return ThreadCpuSeconds() - t0; }

// One device (id 0) through all five steps (the consistency check too) with k real neighbour keys; the
// neighbours' encrypted shares are sealed here under the real channel keys.
bool MeasureDevice(const RoundParams& p, DeviceCost& cost) {
  uint32_t nbr[kMaxNeighbours];
  const uint32_t k = Neighbours(p, 0, nbr);
  std::vector<Advertise> ads(k);
  std::vector<DeviceEntropy> ent(k);
  for (uint32_t j = 0; j < k; ++j) {
    ent[j] = SimulatedEntropy(77, p.round_id, nbr[j]);
    ads[j].id = nbr[j];
    if (!X25519Public(ent[j].c_sk, ads[j].c_pk).ok() || !X25519Public(ent[j].s_sk, ads[j].s_pk).ok()) return false;
  }
  SecAggDevice dev;
  Advertise mine;
  std::vector<ShareCiphertext> out(kMaxNeighbours);
  std::vector<uint32_t> x(p.dim), y(p.dim);
  CounterRng rng(5);
  for (auto& v : x) v = static_cast<uint32_t>(rng.next_u64() >> (64 - p.bits));
  size_t written = 0;
  double t0 = ThreadCpuSeconds();
  if (!dev.advertise(p, 0, SimulatedEntropy(77, p.round_id, 0), mine).ok()) return false;
  if (!dev.share_keys(ads.data(), k, out.data(), out.size(), written).ok()) return false;
  cost.seconds = CpuSince(t0);
  // What the neighbours would have sent us (not timed: their work, not ours).
  std::vector<ShareCiphertext> in(k);
  std::vector<ConsistencyTag> tags(k);
  std::vector<uint32_t> everyone(p.n);  // nobody drops: every list names all of D
  for (uint32_t i = 0; i < p.n; ++i) everyone[i] = i;
  for (uint32_t j = 0; j < k; ++j) {
    uint8_t key[kKeyBytes], plain[kSharePlainBytes] = {}, nonce[kNonceBytes], aad[16];
    if (!DeriveKey(p, ent[j].c_sk, mine.c_pk, kShareChannelLabel, key).ok()) return false;
    uint8_t caad[kConsistencyAadBytes], none[1] = {0};
    tags[j].from = nbr[j];
    ConsistencyNonce(nbr[j], 0, nonce);
    const size_t clen = ConsistencyAad(p, nbr[j], 0, everyone.data(), everyone.size(), caad);
    if (!AeadSeal(key, nonce, caad, clen, none, 0, none, tags[j].tag).ok()) return false;
    for (int i = 0; i < 4; ++i) plain[i] = static_cast<uint8_t>(nbr[j] >> (8 * i));
    plain[8] = HolderX(p, nbr[j], 0);
    for (size_t i = 9; i < kSharePlainBytes; ++i) plain[i] = static_cast<uint8_t>(rng.next_u64());
    in[j].from = nbr[j];
    in[j].to = 0;
    ShareNonce(nbr[j], 0, nonce);
    ShareAad(p, nbr[j], 0, aad);
    if (!AeadSeal(key, nonce, aad, sizeof aad, plain, kSharePlainBytes, in[j].ct, in[j].tag).ok()) return false;
  }
  std::vector<uint32_t> surv(nbr, nbr + k);
  surv.insert(std::upper_bound(surv.begin(), surv.end(), 0u), 0u);
  std::vector<UnmaskShare> shares(kMaxNeighbours + 1);
  std::vector<ConsistencyTag> mine_tags(kMaxNeighbours);
  t0 = ThreadCpuSeconds();
  if (!dev.masked_input(in.data(), k, x.data(), y.data()).ok()) return false;
  if (!dev.check_survivors(surv.data(), surv.size(), mine_tags.data(), mine_tags.size(), written).ok()) return false;
  if (!dev.unmask_checked(tags.data(), k, shares.data(), shares.size(), written).ok()) return false;
  cost.seconds += CpuSince(t0);
  cost.up = kAdvertiseBytes + k * kShareCiphertextBytes + 4ull * p.dim + k * kConsistencyTagBytes +
            (k + 1) * kUnmaskShareBytes;
  cost.down = k * kAdvertiseBytes + k * kShareCiphertextBytes + 4ull * (k + 1) + k * kConsistencyTagBytes;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t dim = 1000, bits = 16, full_max = 100;
  CLI::App app{"fedrt-secagg-bench: SecAgg+ bandwidth expansion and device cost per round (a table)", "fedrt-secagg-bench"};
  app.add_option("--dim", dim, "entries of each device's input")->check(CLI::Range(1u, 1u << 24));
  app.add_option("--bits", bits, "bits per entry")->check(CLI::Range(1, 31));
  app.add_option("--full-max", full_max, "largest N run with every device's cost measured");
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  const uint64_t plain = (static_cast<uint64_t>(dim) * bits + 7) / 8;
  fmt::print("\n== secure aggregation (SecAgg+), one round: d = {}, b = {} bits, unmasked update {} B ==\n", dim, bits, plain);
  fmt::print("{:>5} {:>3} {:>3} {:>12} {:>12} {:>10} {:>12} {:>11} {:>11} {:>11}\n", "N", "k", "t", "fail@20%",
             "up B/device", "expansion", "down B/dev", "device ms", "round s", "server ms");
  for (uint32_t n : {10u, 100u, 1000u}) {
    RoundParams p;
    p.n = n;
    p.dim = dim;
    p.bits = bits;
    p.round_id = 1;
    p.graph_seed = 2024;
    DefaultGraph(n, p.k, p.t);
    const Status st = ValidateParams(p);
    if (!st.ok()) {
      fmt::print("{:>5}  refused: {}\n", n, st.message());
      continue;
    }
    DeviceCost best;
    best.seconds = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      DeviceCost c;
      if (!MeasureDevice(p, c)) {
        fmt::print(stderr, "device measurement failed at N = {}\n", n);
        return 1;
      }
      if (c.seconds < best.seconds) best = c;
    }
    std::string round_s = "-", server_ms = "-";
    if (n <= full_max) {  // the whole round in process: every device and the server
      std::vector<std::vector<uint32_t>> xs(n, std::vector<uint32_t>(dim, (1u << bits) - 1));
      std::vector<const uint32_t*> ptrs;
      for (auto& v : xs) ptrs.push_back(v.data());
      const auto t0 = Clock::now();
      const SimulatedRound r = RunSimulatedRound(p, ptrs, {}, 9);
      const double wall = Since(t0);
      if (!r.status.ok() || r.traffic.up_max != best.up) {
        fmt::print(stderr, "full round at N = {} failed or disagrees: {} (up {} vs {})\n", n, r.status.message(),
                   r.traffic.up_max, best.up);
        return 1;
      }
      round_s = fmt::format("{:.2f}", wall);
      server_ms = fmt::format("{:.2f}", 1e3 * r.traffic.server_seconds);
    }
    fmt::print("{:>5} {:>3} {:>3} {:>12.2e} {:>12} {:>9.2f}x {:>12} {:>11.1f} {:>11} {:>11}\n", n, p.k, p.t,
               UnmaskFailureBound(n, p.k, p.t, 0.2), best.up, static_cast<double>(best.up) / plain, best.down,
               1e3 * best.seconds, round_s, server_ms);
  }
  fmt::print("expansion = device uplink bytes of all five protocol steps / d b / 8; it tends to 32 / b as d grows:\n");
  for (uint32_t d : {100u, 10000u, 1000000u}) {
    std::string line = fmt::format("  d = {:>7}:", d);
    for (uint32_t n : {10u, 100u, 1000u}) {
      uint32_t k, t;
      DefaultGraph(n, k, t);
      const double up = kAdvertiseBytes + k * kShareCiphertextBytes + 4.0 * d + k * kConsistencyTagBytes +
                        (k + 1) * kUnmaskShareBytes;
      line += fmt::format("  N = {} {:.2f}x", n, up / ((static_cast<double>(d) * bits + 7) / 8));
    }
    fmt::print("{}\n", line);
  }
  fmt::print("device ms: one device's CPU time in the five steps (2k + 2 X25519, 2k AEAD seal/open, k + 1 ChaCha20 masks of d words)\n");
  fmt::print("Cortex-M4F instructions per round: fedrt-fw-secagg-bench under QEMU -icount (./fedrt bench, ctest fw_secagg_round)\n");
  return 0;
}
