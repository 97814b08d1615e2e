#pragma once
// The round protocol's messages as plain data (docs/architecture.md, "Round
// protocol"). The sessions consume and produce these; the wire module turns
// them into fedrt.proto frames (protobuf-lite on Linux, nanopb on
// microcontrollers) and the simulator passes them in memory. Vectors are views
// (pointer + count) into memory owned by whoever produced the message, valid
// until that object's next call. Device code.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "fedrt/task/limits.h"
#include "fedrt/secagg/protocol.h"

namespace fedrt::protocol {

template <class T>
struct View {
  const T* data = nullptr;
  uint32_t size = 0;
  const T& operator[](uint32_t i) const { return data[i]; }
};

// (algorithm, run, round) of the experiment's schedule. The initial exchange
// of FedEM's control variates uses round kInitRound.
struct RoundId {
  uint32_t algorithm = 0;  // index in the task's algorithm list
  uint32_t run = 0;
  uint32_t round = 0;  // t
  bool operator==(const RoundId& o) const { return algorithm == o.algorithm && run == o.run && round == o.round; }
  bool operator!=(const RoundId& o) const { return !(*this == o); }
};
constexpr uint32_t kInitRound = 0xFFFFFFFFu;

enum class WorkKind : uint8_t {
  kLocalWork = 0,         // the family's local rule from the broadcast
  kInitialStatistic = 1,  // FedEM: V_{0,c} = sbar_c(T(Shat_0)) - Shat_0, sent once per run
};

// SecAgg+ parameters of a secure round as one device sees them.
struct SecAggRound {
  bool enabled = false;
  uint64_t round_id = 0;
  uint64_t graph_seed = 0;
  uint32_t n = 0, k = 0, t = 0;  // devices, neighbours, threshold
  uint32_t id = 0;               // this device's id u in 0..n-1
};

// Server -> device: the round's broadcast and what to do with it.
struct Announcement {
  RoundId id;
  WorkKind kind = WorkKind::kLocalWork;
  uint32_t local_steps = 0;  // this round's block length (H, geometric under SCAFFLSA-H1)
  bool report = true;        // false: update local state only (VR-FedEM agents not sampled)
  uint32_t deadline_ms = 0;  // time left to report
  View<double> model;        // the broadcast (layout: docs/architecture.md, per family)
  SecAggRound secagg;
  // Compressed downlink (docs/architecture.md, "Downlink"): the agents' model
  // xhat has a version (0: the run's start, +1 per round closed). With
  // has_delta, `model` is empty and delta[k] (chain k's codec bytes of
  // Q(x - xhat)) moves a device holding version delta_base to model_version;
  // otherwise `model` is xhat at model_version itself.
  uint32_t model_version = 0;
  bool has_delta = false;
  uint32_t delta_base = 0;
  View<uint8_t> delta[task::kMaxSegments];
  // Chunked transfer (docs/architecture.md, "Chunked transfer"): a driver that
  // received the broadcast in chunks wrote it with
  // ClientSession::receive_broadcast and sets model_in_place (`model` empty).
  bool model_in_place = false;
  uint64_t model_bytes = 0;  // on the wire: the broadcast follows in this many bytes of chunks
  // A re-announcement after a chunked update was cut off: the server holds
  // the first resume_bytes[k] bytes of segment k.
  bool resume = false;
  uint64_t resume_bytes[task::kMaxSegments] = {};
  // Adaptive clipping (docs/privacy.md, "Adaptive clipping"): this round's
  // clip C_t, which replaces task.privacy.clip; 0: the task's clip.
  double clip = 0;
  // Buffered asynchronous rounds under SecAgg+ (docs/async.md): the
  // re-announcement of a held job scales the device's integers around their
  // zero point by this staleness weight w = (1 + s)^-a before masking,
  // x <- round(w (x - z) + z), z = (2^b - 1) / 2; 0: not weighted.
  double weight = 0;
};

enum class Encoding : uint8_t {
  kRawFloat64 = 0,  // d little-endian float64 values per segment
  kCodec = 1,       // the compression codec's bytes (fedrt.proto, Update)
  kRawFloat32 = 2,  // FedEM's V_{0,c}, float32 little-endian
};

// What a device says about its round of local work (docs/data.md, "Reports"):
// the local objective f_c at the broadcast model and at its local model after
// the local steps (measured on own-data optimisation tasks; NaN otherwise),
// the examples it read, and the wall time of the local work (set by the driver: sessions never read
// a clock; 0 = not measured).
struct WorkReport {
  double loss_before = std::numeric_limits<double>::quiet_NaN();
  double loss_after = std::numeric_limits<double>::quiet_NaN();
  uint32_t duration_ms = 0;
  uint64_t examples = 0;  // examples the local work read (with repetition); 0 = not counted
};

// Device -> server: the local result, one coded segment per chain.
struct Update {
  RoundId id;
  Encoding encoding = Encoding::kRawFloat64;
  uint32_t segments = 0;
  View<uint8_t> payload[task::kMaxSegments];
  uint64_t sample_count = 0;  // samples (or statistic evaluations) the local work drew
  WorkReport report;
  // Chunked: the header of a streamed update; segment k's payload_bytes[k]
  // bytes follow in Chunk messages (payload[k] empty).
  bool chunked = false;
  uint64_t payload_bytes[task::kMaxSegments] = {};
  // Adaptive clipping: 0 none (the announcement had no clip), 1 ||dx|| > C_t,
  // 2 ||dx|| <= C_t (b_i = 1), measured before the update was clipped.
  uint8_t clip_indicator = 0;
};

// A piece of a chunked transfer: bytes [offset, offset + data.size) of
// segment `segment` (of the update; 0: the broadcast), `total` bytes in all.
struct Chunk {
  RoundId id;
  uint32_t segment = 0;
  uint64_t offset = 0;
  uint64_t total = 0;
  View<uint8_t> data;
};

// Server -> devices whose update was aggregated (included) or dropped.
struct RoundResult {
  RoundId id;
  bool included = false;
  View<double> model;  // what the family's commit needs (LSA: theta_{t+1}); may be empty
};

// SecAgg+ phases (secagg/protocol.h), every message tagged with its round.
struct SecAggAdvertiseMsg {
  RoundId id;
  secagg::Advertise keys;  // keys.id is set by the server from the device's identity
};
struct SecAggKeysMsg {  // server -> device: the advertisements of its neighbours
  RoundId id;
  View<secagg::Advertise> peers;
};
struct SecAggSharesMsg {  // device -> server (to = recipient) and server -> device (from = sender)
  RoundId id;
  View<secagg::ShareCiphertext> shares;
};
struct SecAggMaskedMsg {
  RoundId id;
  View<uint32_t> masked;  // y_u
  WorkReport report;      // the secure round's counterpart of Update::report
};
struct SecAggUnmaskRequestMsg {
  RoundId id;
  View<uint32_t> survivors;
};
struct SecAggCheckMsg {  // device -> server (to = recipient) and server -> device (from = sender)
  RoundId id;
  View<secagg::ConsistencyTag> tags;
};
struct SecAggUnmaskMsg {
  RoundId id;
  View<secagg::UnmaskShare> shares;
};

// What a session asks its driver to send.
enum class MessageKind : uint8_t {
  kNone = 0,
  kAnnouncement,
  kUpdate,
  kRoundResult,
  kSecAggAdvertise,
  kSecAggKeys,
  kSecAggShares,    // device -> server
  kSecAggSharesIn,  // server -> device
  kSecAggMasked,
  kSecAggUnmaskRequest,
  kSecAggCheck,     // device -> server: consistency tags
  kSecAggChecks,    // server -> device: the tags addressed to it
  kSecAggUnmask,
  kChunk,
};

// One device -> server message: `kind` says which member holds it (kUpdate,
// kChunk, or a device's SecAgg+ phase). ServerSession::on_message takes it;
// ClientSession::on_message produces it.
struct ClientMessage {
  MessageKind kind = MessageKind::kNone;
  Update update;
  Chunk chunk;  // a piece of a chunked update
  SecAggAdvertiseMsg advertise;
  SecAggSharesMsg shares;
  SecAggMaskedMsg masked;
  SecAggCheckMsg check;
  SecAggUnmaskMsg unmask;
};

// One server -> device message: `kind` says which member holds it
// (kAnnouncement, kChunk, kRoundResult, or a server's SecAgg+ phase).
struct ServerMessage {
  MessageKind kind = MessageKind::kNone;
  Announcement announcement;
  Chunk chunk;  // a piece of a chunked broadcast
  RoundResult result;
  SecAggKeysMsg keys;
  SecAggSharesMsg shares;  // kSecAggSharesIn
  SecAggUnmaskRequestMsg unmask_request;
  SecAggCheckMsg checks;   // kSecAggChecks
  // The (algorithm, run, round) the message names.
  RoundId id() const {
    switch (kind) {
      case MessageKind::kAnnouncement: return announcement.id;
      case MessageKind::kChunk: return chunk.id;
      case MessageKind::kRoundResult: return result.id;
      case MessageKind::kSecAggKeys: return keys.id;
      case MessageKind::kSecAggSharesIn: return shares.id;
      case MessageKind::kSecAggUnmaskRequest: return unmask_request.id;
      case MessageKind::kSecAggChecks: return checks.id;
      default: return RoundId{};
    }
  }
};

}  // namespace fedrt::protocol
