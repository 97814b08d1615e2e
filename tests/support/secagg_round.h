#pragma once
// One SecAgg+ round with every device and the server in one process, for
// the tests and the benchmark (a test-support library: no product binary
// links it): they run exactly the device and server state machines
// (secagg/device.h, secagg/server.h) and pass their messages by value, with
// devices that drop out or cheat and a server that lies. Device secrets come
// from secagg/simulated_entropy.h. Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/secagg/protocol.h"
#include "fedrt/secagg/server.h"
#include "fedrt/secagg/simulated_entropy.h"

namespace fedrt::secagg {

// When a device vanishes (it sends nothing from that round on).
enum class DropPoint : uint8_t {
  kNone = 0,
  kBeforeAdvertise,  // never shows up
  kBeforeShares,     // advertised keys only
  kBeforeMasked,     // shared keys, sends no masked input (its pairwise masks must be removed)
  kBeforeUnmask,     // sent y_u, then vanished before the consistency check (its self mask is removed from neighbours' shares)
  kAfterCheck,       // sent its consistency tags, then vanished before revealing shares
};

// How a device cheats (tests of the server's unmasking, server.h OffShare).
enum class Cheat : uint8_t {
  kNone = 0,
  kWrongUnmaskShares,    // round 3: every revealed share has its bytes flipped (well-formed otherwise)
  kInconsistentDealing,  // round 1: two neighbours get shares of b and s_sk on another polynomial
};

// A lying server (tests of the consistency check): it tells the devices in
// `told_dropped` that `victim` dropped although its masked input arrived. With
// `suppress`, it forwards consistency tags only between devices told the same.
struct SurvivorLie {
  uint32_t victim = 0;
  std::vector<uint32_t> told_dropped;
  bool suppress = false;
};

// Everything the server receives in a round (the privacy test inspects it).
struct Transcript {
  std::vector<Advertise> ads;
  std::vector<ShareCiphertext> shares;
  std::vector<uint32_t> masked_from;
  std::vector<std::vector<uint32_t>> masked;  // y_u, in masked_from order
  std::vector<UnmaskShare> unmask;
};

struct RoundTraffic {
  uint64_t up_bytes = 0;    // all devices -> server, every round of the protocol
  uint64_t down_bytes = 0;  // server -> all devices
  uint64_t up_max = 0;      // largest single device's uplink bytes
  double device_seconds = 0.0;  // CPU time (this thread) in device calls, summed over devices
  double device_max_seconds = 0.0;
  double server_seconds = 0.0;
};

struct SimulatedRound {
  Status status;                      // why the round failed, if it did
  std::vector<uint32_t> sum;          // sum_{u in contributors} x_u mod 2^32
  std::vector<uint32_t> contributors;  // U3
  RoundTraffic traffic;
  uint32_t device_failures = 0;  // devices that refused a message (they drop out)
  Status first_device_error;
  std::vector<OffShare> off_shares;  // shares the server dropped as off their polynomial
  std::vector<uint32_t> cheaters;    // the devices they convict
  std::vector<uint32_t> detected_lie;  // devices whose consistency check failed (ABORTED): they revealed nothing
};

// Runs round p with inputs[u] (p.dim entries, each < 2^bits) for u < p.n;
// drops[u] (empty = nobody drops) says when device u vanishes; cheats[u]
// (empty = nobody cheats) how it lies; `lie` makes the server lie. Every round
// runs the consistency check before unmasking.
SimulatedRound RunSimulatedRound(const RoundParams& p, const std::vector<const uint32_t*>& inputs,
                                 const std::vector<DropPoint>& drops, uint64_t entropy_seed,
                                 Transcript* transcript = nullptr, const std::vector<Cheat>& cheats = {},
                                 const SurvivorLie* lie = nullptr);

// CPU time of the calling thread (the cost figures are CPU, not wall, time).
double ThreadCpuSeconds();

}  // namespace fedrt::secagg
