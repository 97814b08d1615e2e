#pragma once
// Device-facing limits of the protocol, in one place. The wire bounds of
// runtime/wire/fedrt.options are these numbers (checked by
// tests/unit/limits_test.cc); devices size their buffers from them.

#include <cstddef>
#include <cstdint>

namespace fedrt::config {

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
constexpr uint32_t kMaxReasonChars = 127;  // error and refusal messages
constexpr uint32_t kMaxLabelChars = 63;    // the label column's name ([data] label)
constexpr uint32_t kMaxFrameBytes = 64 * 1024;  // largest frame body a host accepts

static_assert(kMaxSegmentBytes >= 4 + (42 * kMaxSegmentScalars + 7) / 8, "dithering payload bound");

}  // namespace fedrt::config
