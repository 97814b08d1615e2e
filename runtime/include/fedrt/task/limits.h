#pragma once
// Device-facing limits of the protocol, in one place, in two profiles
// (docs/architecture.md, "Wire"):
// - the microcontroller profile (kMaxDim, kMaxFrameBytes, ...): the nanopb
//   bounds of runtime/wire/fedrt.options are these numbers (checked by
//   tests/wire/limits_test.cc) and a firmware sizes its buffers from them;
// - the Linux profile (kMaxLinuxDim, kMaxLinuxFrameBytes, ...): what the
//   protobuf-lite codec of the coordinator and the Linux devices accepts.
// A task beyond a firmware image's bounds is refused by that device alone.

#include <cstddef>
#include <cstdint>

namespace fedrt::task {

constexpr uint32_t kMaxAlgorithms = 8;  // algorithms per experiment
constexpr uint32_t kMaxDim = 256;       // model dimension d on the wire
constexpr uint32_t kMaxSegments = 2;    // independently coded parts of an update (Fed-RR: two chains)
// Scalars of one segment of an update: Scaffold sends (dx, dc).
constexpr uint32_t kMaxSegmentScalars = 2 * kMaxDim;
// Scalars of a broadcast: per chain the model and one more vector (Scaffold's
// c, FedEM's T(Shat) next to Shat).
constexpr uint32_t kMaxBroadcastScalars = kMaxSegments * 2 * kMaxDim;
// Bytes of one coded segment: raw float64 is the longest encoding (dithering
// needs at most 4 + ceil(42 n / 8) bytes for n scalars, rounding 3 n).
constexpr uint32_t kMaxSegmentBytes = 8 * kMaxSegmentScalars;
constexpr uint32_t kMaxMaskedScalars = kMaxSegments * kMaxSegmentScalars;  // SecAgg+ input length
constexpr uint32_t kMaxIdChars = 63;      // device ids
constexpr uint32_t kMaxPlatformChars = 31;  // Hello.platform (task/platform.h)
constexpr uint32_t kMaxReasonChars = 127;  // error and refusal messages
constexpr uint32_t kMaxLabelChars = 63;    // the label column's name ([data] label)
constexpr uint32_t kMaxFrameBytes = 64 * 1024;  // largest frame body a microcontroller accepts

// The Linux profile: the same formulas at d <= 65536 for what travels inline
// (in one frame).
constexpr uint32_t kMaxLinuxDim = 65536;
constexpr uint32_t kMaxLinuxSegmentScalars = 2 * kMaxLinuxDim;
constexpr uint32_t kMaxLinuxBroadcastScalars = kMaxSegments * 2 * kMaxLinuxDim;
constexpr uint32_t kMaxLinuxSegmentBytes = 8 * kMaxLinuxSegmentScalars;
constexpr uint32_t kMaxLinuxMaskedScalars = kMaxSegments * kMaxLinuxSegmentScalars;
constexpr uint32_t kMaxLinuxFrameBytes = 16u * 1024 * 1024;  // largest frame body the coordinator and a Linux device accept

// Chunked transfer (docs/architecture.md, "Chunked transfer"): a broadcast or
// an update segment longer than one chunk travels as a header and Chunk
// messages. kChunkBytes is the data of one chunk the coordinator and Linux
// devices send and take: a multiple of 8 (raw float64 is cut at whole values)
// that keeps a Chunk frame within one 16 KiB TLS record. A microcontroller
// names its own, smaller, size in Hello.max_chunk_bytes.
constexpr uint32_t kChunkBytes = 16384 - 64;
constexpr uint32_t kMinChunkBytes = 256;   // the smallest a device may ask for
constexpr uint32_t kMcuChunkBytes = 1024;  // the microcontroller profile's chunk (nanopb bound of Chunk.data)
// The largest model a Linux device takes when the large messages are chunked
// (2^27 scalars: 1 GiB per float64 vector). What still travels inline keeps
// the inline limits above: LSA round results (theta_{t+1}), SecAgg+ masked
// inputs and the compressed downlink's delta.
constexpr uint32_t kMaxLinuxStreamDim = 1u << 27;

static_assert(kChunkBytes % 8 == 0 && kMinChunkBytes % 8 == 0, "chunks cut raw float64 at whole values");
static_assert(kMaxSegmentBytes >= 4 + (42 * kMaxSegmentScalars + 7) / 8, "dithering payload bound");
static_assert(kMaxLinuxSegmentBytes >= 4 + (42 * kMaxLinuxSegmentScalars + 7) / 8, "dithering payload bound");
// The longest message of the Linux profile fits a frame with room for its
// framing: a broadcast of float64 (protobuf packed doubles), an update of
// kMaxSegments raw segments, a masked input of varint-coded u32 (<= 5 bytes).
static_assert(8ull * kMaxLinuxBroadcastScalars + 4096 <= kMaxLinuxFrameBytes, "broadcast fits a Linux frame");
static_assert(1ull * kMaxSegments * kMaxLinuxSegmentBytes + 4096 <= kMaxLinuxFrameBytes, "update fits a Linux frame");
static_assert(5ull * kMaxLinuxMaskedScalars + 4096 <= kMaxLinuxFrameBytes, "masked input fits a Linux frame");
static_assert(kMaxDim <= kMaxLinuxDim && kMaxFrameBytes <= kMaxLinuxFrameBytes, "the microcontroller profile is the tighter");

}  // namespace fedrt::task
