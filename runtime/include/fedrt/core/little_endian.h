#pragma once
// Little-endian byte order for values the secure-aggregation messages and
// nonces carry (docs/secure-aggregation.md): the same bytes on every
// target, whatever its own order. Device code: no heap, no exceptions.
#include <cstdint>

namespace fedrt {

// p[0..3] = v, least significant byte first.
inline void PutLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
// p[0..7] = v, least significant byte first.
inline void PutLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
// The value PutLe32 wrote at p.
inline uint32_t GetLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace fedrt
