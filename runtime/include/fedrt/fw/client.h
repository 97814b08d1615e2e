#pragma once
// The firmware's device client (docs/architecture.md, "Round protocol" and
// "Wire"): a thin driver of the same ClientSession as fedrt-sim and
// fedrt-device, in float, for the families its build contains. Over an
// abstract byte link (a UART on the board, a TCP socket on the host) it runs
// TLS 1.2 PSK (mbedTLS built with runtime/fw/mbedtls_config.h), then the
// fedrt.proto session with nanopb: Hello -> Welcome (the task) -> TaskReply
// -> (RoundAnnouncement -> Update | SecAgg+ phases -> RoundResult)* -> Shutdown.
// The device's data is its provisioned problem image (problem_image.h); the
// task decides algorithm, hyper-parameters, compression and SecAgg+. A task
// this build cannot run (family not built in, data or memory too small,
// frames over this image's bounds) is refused in TaskReply with the reason.
// No exceptions, no RTTI, no heap: mbedTLS allocates from a static buffer,
// the session from the caller's workspace, everything else is static.
// Bad input from the link (corrupted TLS records, oversized or undecodable
// frames, invalid messages) is rejected with a logged Status and the client
// stays in the federation. One FwClient per program.

#include <cstddef>
#include <cstdint>

#include "fedrt/core/status.h"
#include "fedrt/fw/problem_image.h"

namespace fedrt::fw {

// A byte stream to the coordinator.
struct ByteLink {
  void* ctx = nullptr;
  // Writes up to n bytes: returns how many (> 0), or < 0 when the link is broken.
  int (*write)(void* ctx, const uint8_t* data, size_t n) = nullptr;
  // Reads up to n bytes, waiting at most timeout_ms: > 0 bytes, 0 on timeout, < 0 broken.
  int (*read)(void* ctx, uint8_t* data, size_t n, uint32_t timeout_ms) = nullptr;
  // Optional: re-establishes the transport before a new session (e.g. a new
  // TCP connection). Returns 0 on success. Null on a UART.
  int (*reconnect)(void* ctx) = nullptr;
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
  ProblemView problem;  // the provisioned data (ParseProblemImage)
  ByteLink link;
  // The caller's memory for the local oracle and the protocol session
  // (16-byte aligned); its size bounds the tasks this device accepts.
  uint8_t* workspace = nullptr;
  size_t workspace_bytes = 0;
  LogFn log = nullptr;  // one line per call, no trailing newline
  void* log_ctx = nullptr;
  uint32_t handshake_timeout_ms = 5000;  // per handshake read; a new attempt follows
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
  size_t tls_heap_max_bytes = 0;  // high-water mark of mbedTLS's static heap
  size_t tls_heap_bytes = 0;      // its capacity
  size_t workspace_max_bytes = 0; // high-water mark of the workspace
};

class FwClient {
 public:
  FwClient() = default;
  FwClient(const FwClient&) = delete;
  FwClient& operator=(const FwClient&) = delete;

  // Validates the options and sets up mbedTLS (static heap, HMAC_DRBG seeded
  // from the identity's entropy seed, PSK, ChaCha20-Poly1305 only).
  Status init(const ClientOptions& options);
  // Sessions until the coordinator's Shutdown (OK), a refused task
  // (FAILED_PRECONDITION, after TaskReply), a refusal by the coordinator
  // (PERMISSION_DENIED) or too many failed sessions (UNAVAILABLE).
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
