#pragma once
// TlsLink: the firmware's TLS 1.3 PSK session (with an X25519 exchange
// unless the coordinator allows psk_ke only) over a non-blocking ByteLink
// (a UART on the board, TCP on the host, byte queues in a test) and the
// length-prefixed frames on it (docs/architecture.md, "Wire"). Nothing here
// waits: every call does what the link allows and says whether it is done,
// must wait for the link (kPending) or the session is over (kEnd). mbedTLS
// (runtime/fw/fw_mbedtls_config.h) allocates from one heap buffer given to
// init(); its buffer allocator is global, hence one TlsLink per program. The
// HMAC_DRBG, seeded from the link's entropy source, also draws the SecAgg+
// round secrets. Device code.

#include <cstddef>
#include <cstdint>

#include <mbedtls/hmac_drbg.h>
#include <mbedtls/ssl.h>

#include "fedrt/core/status.h"
#include "fedrt/fw/client.h"

namespace fedrt::fw {

class TlsLink {
 public:
  enum class Io { kDone, kPending, kEnd };
  // What read_frame() found: a frame, a dropped oversized frame, nothing yet, or the end.
  enum class Frame { kOk, kSkipped, kPending, kEnd };

  // Sets up mbedTLS on `heap` (static or the caller's workspace, 8-aligned),
  // the DRBG (also PSA crypto's), PSK, ChaCha20-Poly1305 only. `opt`
  // and `heap` must outlive the link.
  Status init(const ClientOptions* opt, ClientStats* stats, uint8_t* heap, size_t heap_bytes);
  // Starts a new TLS session (after reset).
  Status reset();
  // Advances the handshake; kDone once established (logs the suite), kEnd on failure (logged).
  Io handshake_step();
  // Best-effort close_notify (one attempt, never waits).
  void close_notify();
  // Queues `body` (n bytes) as one frame: the caller leaves 4 bytes before it
  // and keeps the buffer until flush() is kDone.
  void begin_frame(uint8_t* body, size_t n);
  // Writes what the link takes of the queued frame.
  Io flush();
  // Reads towards one frame into `buf` (at most cap bytes): kOk with its
  // length, kSkipped for a frame over `cap` (logged; read and dropped when its
  // length is under the hosts' limit), kPending until more bytes arrive,
  // kEnd when the session is over (logged).
  Frame read_frame(uint8_t* buf, size_t cap, size_t& len);
  // Reads and drops up to n raw link bytes (draining a UART): the count, or < 0 broken.
  int drain(size_t n);
  // Milliseconds of the link's clock when a byte last arrived.
  uint32_t last_rx_ms() const { return last_rx_ms_; }
  void touch() { last_rx_ms_ = now(); }
  // Whether the last operation that would block waited for room to write (else for bytes).
  bool wants_write() const { return want_write_; }
  uint32_t now() const;
  // n random bytes from the DRBG (SecAgg+ secrets); 0 on success.
  int random(uint8_t* out, size_t n);
  size_t heap_high_water() const;
  size_t heap_bytes() const { return heap_bytes_; }
  void log(const char* line) const;

 private:
  Io read_some(uint8_t* dst, size_t n, size_t& got, int& err);
  Frame end_read(int rc);
  void log_tls(const char* what, int rc) const;
  static int Entropy(void* p, unsigned char* out, size_t len);
  static int Send(void* p, const unsigned char* buf, size_t len);
  static int Recv(void* p, unsigned char* buf, size_t len);

  const ClientOptions* opt_ = nullptr;
  ClientStats* stats_ = nullptr;
  size_t heap_bytes_ = 0;
  mbedtls_ssl_context ssl_;
  mbedtls_ssl_config conf_;
  mbedtls_hmac_drbg_context drbg_;
  uint32_t entropy_counter_ = 0;
  uint32_t last_rx_ms_ = 0;
  bool want_write_ = false;
  // The frame being read: 0 header, 1 body, 2 skipping an oversized body.
  int rd_stage_ = 0;
  size_t rd_pos_ = 0;
  uint32_t rd_len_ = 0;
  uint8_t rd_head_[4] = {};
  // The frame being written.
  const uint8_t* wr_ = nullptr;
  size_t wr_left_ = 0;
};

}  // namespace fedrt::fw
