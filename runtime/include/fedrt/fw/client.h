#pragma once
// The firmware's device client (docs/architecture.md, "Round protocol" and
// "Wire"): a thin driver of the same ClientSession as fedrt-sim and
// fedrt-device, in float, for the families its build contains. Over an
// abstract non-blocking byte link (a UART on the board, a TCP socket on the
// host, byte queues in a test) it runs TLS 1.3 PSK with X25519 (mbedTLS built with
// runtime/fw/fw_mbedtls_config.h), then the fedrt.proto session with nanopb:
// Hello -> Welcome (the task) -> TaskReply -> (RoundAnnouncement -> Update |
// SecAgg+ phases -> RoundResult)* -> Shutdown.
// It is a state machine driven by poll(): each call does all the work the link
// allows and returns what it needs next (bytes to read, room to write, the
// device's samples, time to pass) or that it is done; timeouts come from the
// link's millisecond clock. run() loops over poll() for apps that may block.
// The device's data is its provisioned problem image (problem_image.h) or,
// for a task on the devices' own data (docs/data.md), its samples: in place
// (flash), pulled by a callback or fed into a store in the workspace. The
// task decides algorithm, hyper-parameters, compression and SecAgg+. A task
// this build cannot run (family not built in, data or memory too small,
// frames over this image's bounds) is refused in TaskReply with the reason.
// No exceptions, no RTTI, no heap: mbedTLS allocates from a heap buffer
// (static, or the caller's), the session from the caller's workspace.
// Bad input from the link (corrupted TLS records, oversized or undecodable
// frames, invalid messages) is rejected with a logged Status and the client
// stays in the federation. One FwClient per program (mbedTLS's allocator is global).

#include <cstddef>
#include <cstdint>

#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/fw/problem_image.h"

namespace fedrt::fw {

// A non-blocking byte stream to the coordinator, a clock and entropy.
struct ByteLink {
  void* ctx = nullptr;
  // Writes up to n bytes without waiting: how many (> 0), 0 when it would block, < 0 broken.
  int (*write)(void* ctx, const uint8_t* data, size_t n) = nullptr;
  // Reads up to n bytes without waiting: how many (> 0), 0 when none are there, < 0 broken.
  int (*read)(void* ctx, uint8_t* data, size_t n) = nullptr;
  // Milliseconds of a monotonic clock (wrapping at 2^32).
  uint32_t (*now_ms)(void* ctx) = nullptr;
  // Optional: n random bytes for the DRBG's seed, 0 on success (null: identity.entropy_seed).
  int (*entropy)(void* ctx, uint8_t* out, size_t n) = nullptr;
  // Optional: re-establishes the transport before a new session (e.g. a new
  // TCP connection); 0 on success, else retried after a backoff. Null on a
  // UART, whose stale bytes are drained instead.
  int (*reconnect)(void* ctx) = nullptr;
  // For run() only: waits up to ms for bytes to read (or, write = true, room to write).
  void (*wait)(void* ctx, uint32_t ms, bool write) = nullptr;
};

// The device's own samples (tasks with own_data, docs/data.md), float32.
struct SampleOptions {
  // In place (e.g. a shard in flash): rows x dim features row-major, one label each.
  const float* x = nullptr;
  const float* y = nullptr;
  uint32_t rows = 0;
  uint32_t dim = 0;
  // Or pulled when a task needs them: writes example `index` (0, 1, ...);
  // returns 1 for an example, 0 after the last one, < 0 on an error.
  int (*pull)(void* ctx, uint32_t index, float* x, uint32_t dim, float* y) = nullptr;
  void* pull_ctx = nullptr;
  // Store in the workspace for pulled or fed examples (0: none).
  uint32_t store_rows = 0;
  uint32_t store_dim = 0;
};

// What the device was provisioned with.
struct Identity {
  const char* device_id = nullptr;       // = PSK identity, at most 63 chars
  const uint8_t* psk = nullptr;          // 16..64 bytes
  size_t psk_len = 0;
  const uint8_t* entropy_seed = nullptr;  // per-device seed of the random generator (>= 32 bytes)
  size_t entropy_seed_len = 0;
};

using LogFn = void (*)(void* ctx, const char* line);

struct ClientOptions {
  Identity identity;
  ProblemView problem;  // the provisioned data (ParseProblemImage), or none (table null)
  SampleOptions samples;  // own data
  ByteLink link;
  // The caller's memory for the local oracle and the protocol session
  // (16-byte aligned); its size bounds the tasks this device accepts.
  uint8_t* workspace = nullptr;
  size_t workspace_bytes = 0;
  LogFn log = nullptr;  // one line per call, no trailing newline
  void* log_ctx = nullptr;
  uint32_t handshake_timeout_ms = 5000;  // handshake silence before a new attempt
  uint32_t idle_timeout_ms = 120000;     // silence from the coordinator before a new session
  uint32_t max_failed_sessions = 50;     // consecutive sessions without a Welcome before giving up
};

// Counters for tests and the footprint report.
struct ClientStats {
  uint32_t sessions = 0;          // TLS handshakes completed
  uint32_t rounds = 0;            // updates (or SecAgg+ masked inputs) sent
  uint32_t results = 0;           // round results committed
  uint32_t rejected_frames = 0;   // oversized or undecodable frames / invalid messages
  uint32_t rejected_records = 0;  // TLS records that failed authentication or parsing
  uint32_t chunks_in = 0;         // broadcast chunks written into the session
  uint32_t chunks_out = 0;        // update chunks sent
  size_t tls_heap_max_bytes = 0;  // high-water mark of mbedTLS's static heap
  size_t tls_heap_bytes = 0;      // its capacity
  size_t workspace_max_bytes = 0; // high-water mark of the workspace
};

class FwClient {
 public:
  FwClient() = default;
  FwClient(const FwClient&) = delete;
  FwClient& operator=(const FwClient&) = delete;

  // What poll() needs next.
  enum class Need { kRead, kWrite, kSample, kWait, kDone, kError };
  struct Poll {
    Need need = Need::kRead;
    uint32_t wait_ms = 0;  // kRead: ms until a timeout acts; kWait: ms to let pass
    Status status;         // kError: why (kDone: OK)
  };

  // Validates the options and sets up mbedTLS (static heap, HMAC_DRBG seeded
  // from the link's entropy or the identity's seed, PSK, ChaCha20-Poly1305 only).
  Status init(const ClientOptions& options);
  // The same with the client's state at `memory` (ImplBytes(), 16-aligned)
  // and mbedTLS's heap at `tls_heap` (8-aligned): nothing static is used.
  Status init_at(const ClientOptions& options, void* memory, uint8_t* tls_heap, size_t tls_heap_bytes);
  static size_t ImplBytes();
  // Workspace bytes `task` needs (own data in place): the local oracle plus
  // the largest session of its algorithms, as on_welcome checks them.
  static size_t TaskBytes(const task::Task& task);
  // Does what the link allows and says what is needed next: kRead/kWrite
  // (the link would block), kSample (an own-data task and no samples: feed(),
  // then feed_done()), kWait (a backoff), kDone after the coordinator's
  // Shutdown, kError with the reason: a refused task (FAILED_PRECONDITION,
  // after TaskReply), a refusal by the coordinator (PERMISSION_DENIED), too
  // many failed sessions (UNAVAILABLE). kDone and kError are final.
  Poll poll();
  // Appends one example to the workspace store (dim features, label y);
  // INVALID_ARGUMENT for a non-finite value or another dim, RESOURCE_EXHAUSTED when full.
  Status feed(const float* x, uint32_t dim, float y);
  // The store holds all the examples: an own-data task may use them.
  Status feed_done();
  // Loops over poll(), waiting with link.wait, until kDone (OK) or kError.
  Status run();
  ClientStats stats() const;
  // Families this build runs (protocol::FamilySet bits) and a short name.
  static uint32_t Families();
  static const char* BuildName();

  struct Impl;

 private:
  Impl* impl_ = nullptr;
};

}  // namespace fedrt::fw
