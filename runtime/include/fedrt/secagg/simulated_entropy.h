#pragma once
// The SecAgg+ secrets of a simulated device: HKDF of the experiment's
// entropy seed, the round and the device's id, so that a simulated round is
// reproducible (docs/secure-aggregation.md). Simulation only: real devices
// draw theirs from their own random source (CTR-DRBG, a hardware RNG).
// Host code.

#include <cstdint>

#include "fedrt/secagg/protocol.h"

namespace fedrt::secagg {

// The per-round entropy of device `id` in the simulator.
DeviceEntropy SimulatedEntropy(uint64_t entropy_seed, uint64_t round_id, uint32_t id);

}  // namespace fedrt::secagg
