#pragma once
// The firmware's wire codec (docs/architecture.md, "Wire"): the same mapping
// of the task (task/task.h) and of the round protocol's messages
// (protocol/messages.h) onto runtime/wire/fedrt.proto as the host's
// protobuf-lite codec (fedrt/wire/protobuf_codec.h), over nanopb structs. Decoding
// validates everything that arrives against the wire limits
// (task/limits.h), once, where it is decoded, with the same checks as the
// host: enumerations, counts, finite numbers, key and ciphertext sizes.
// Device code: no heap, no exceptions; views point into the decoded Envelope
// or into scratch memory the caller lends (the frame buffer once decoded).
// The nanopb bounds differ per firmware image (runtime/fw/*.options): an
// encoder fails with RESOURCE_EXHAUSTED when a message exceeds its image's.

#include <cstddef>
#include <cstdint>

#include "fedrt.npb.h"
#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"

namespace fedrt::fw {

// Task of a Welcome; `out` is only meaningful when the status is OK.
Status DecodeTask(const fedrt_wire_Task& in, task::Task& out);

// Device -> coordinator messages into `env` (which they overwrite). An
// Update with `chunked` is the header of a chunked update (payload_bytes, no
// payload); its Chunk messages follow (docs/architecture.md, "Chunked transfer").
Status Encode(const protocol::Update& m, fedrt_wire_Envelope& env);
Status Encode(const protocol::Chunk& m, fedrt_wire_Envelope& env);
Status Encode(const protocol::SecAggAdvertiseMsg& m, fedrt_wire_Envelope& env);
Status Encode(const protocol::SecAggSharesMsg& m, fedrt_wire_Envelope& env);  // each ciphertext names its recipient
Status Encode(const protocol::SecAggMaskedMsg& m, fedrt_wire_Envelope& env);
Status Encode(const protocol::SecAggCheckMsg& m, fedrt_wire_Envelope& env);  // each tag names its recipient
Status Encode(const protocol::SecAggUnmaskMsg& m, fedrt_wire_Envelope& env);
// Whichever message the variant holds.
Status Encode(const protocol::ClientMessage& m, fedrt_wire_Envelope& env);

// Largest Envelope payloads this image's nanopb code holds (for the task checks).
uint32_t MaxModelDim();          // RoundResult.model: the largest model dimension d this image decodes
uint32_t MaxBroadcastScalars();  // RoundAnnouncement.model
uint32_t MaxUpdateSegments();    // Update.payload count
uint32_t MaxSegmentBytes();      // Update.payload size
uint32_t MaxMaskedScalars();     // SecAggMasked.masked
uint32_t MaxChunkData();         // Chunk.data size
// The chunk this image takes and sends (Hello.max_chunk_bytes): a frame of
// frame_bytes holds the Chunk envelope and this many data bytes, a multiple of
// 8 (whole float64 values), at most MaxChunkData(); 0 when under kMinChunkBytes.
constexpr uint32_t ChunkBytesFor(size_t frame_bytes) {
  constexpr size_t data_cap = sizeof(fedrt_wire_Chunk_data_t::bytes);
  constexpr size_t overhead = fedrt_wire_Chunk_size - data_cap + 2 + 3;  // + the Envelope tag (field 17) and length
  const size_t room = frame_bytes > overhead ? frame_bytes - overhead : 0;
  const size_t n = (room < data_cap ? room : data_cap) / 8 * 8;
  return n >= task::kMinChunkBytes ? static_cast<uint32_t>(n) : 0u;
}

// One decoded coordinator -> device round message.
class Inbound {
 public:
  // Scratch bytes decode() needs for a SecAgg+ phase's keys or ciphertexts.
  static constexpr size_t kScratchBytes =
      sizeof(secagg::ShareCiphertext) * secagg::kMaxNeighbours > sizeof(secagg::Advertise) * secagg::kMaxNeighbours
          ? sizeof(secagg::ShareCiphertext) * secagg::kMaxNeighbours
          : sizeof(secagg::Advertise) * secagg::kMaxNeighbours;

  // The round message in `env` (announcement, chunk, result or a SecAgg+ phase);
  // an error names what is wrong. `scratch` (8-aligned, kScratchBytes) holds
  // the SecAgg+ tables; the views stay valid while `env` and `scratch` do.
  Status decode(const fedrt_wire_Envelope& env, void* scratch, size_t scratch_bytes);

  const protocol::ServerMessage& message() const { return m_; }

 private:
  protocol::ServerMessage m_;
};
static_assert(sizeof(secagg::ConsistencyTag) * secagg::kMaxNeighbours <= Inbound::kScratchBytes,
              "the consistency tags fit the scratch of the keys and ciphertexts");

}  // namespace fedrt::fw
