#pragma once
// TlsLink: the firmware's TLS 1.2 PSK session over a ByteLink (a UART on the
// board, TCP on the host) and the length-prefixed frames on it
// (docs/architecture.md, "Wire"). mbedTLS (runtime/fw/mbedtls_config.h)
// allocates from one static buffer; its HMAC_DRBG, seeded from the
// provisioned entropy seed, also draws the SecAgg+ round secrets. One
// TlsLink per program (mbedTLS's buffer allocator is global). Device code.

#include <cstddef>
#include <cstdint>

#include <mbedtls/hmac_drbg.h>
#include <mbedtls/ssl.h>

#include "fedrt/core/status.h"
#include "fedrt/fw/client.h"

namespace fedrt::fw {

class TlsLink {
 public:
  // What read_frame() found.
  enum class Frame { kOk, kSkipped, kEnd };

  // Sets up mbedTLS (static heap, DRBG, PSK, ChaCha20-Poly1305 only,
  // max_fragment_length 1024). `opt` must outlive the link.
  Status init(const ClientOptions* opt, ClientStats* stats);
  // A new TLS session (after reset); logs the suite.
  Status handshake();
  // Best-effort close_notify, then a new transport (reconnect) or, on a UART,
  // draining what the old session left in flight.
  void end_session();
  Status write_all(const uint8_t* data, size_t n);
  // Sends `body` (n bytes) as one frame: the caller leaves 4 bytes before it.
  Status send_frame(uint8_t* body, size_t n);
  // Reads one frame into `buf` (body at buf, at most cap bytes): kOk with its
  // length, kSkipped for a frame over `cap` (logged; read and dropped when its
  // length is under the hosts' limit), kEnd when the session is over (logged).
  Frame read_frame(uint8_t* buf, size_t cap, size_t& len);
  // n random bytes from the DRBG (SecAgg+ secrets); 0 on success.
  int random(uint8_t* out, size_t n);
  size_t heap_high_water() const;
  size_t heap_bytes() const;
  void log(const char* line) const;

 private:
  int read_exact(uint8_t* dst, size_t n);
  void log_tls(const char* what, int rc) const;
  static int Entropy(void* p, unsigned char* out, size_t len);
  static int Send(void* p, const unsigned char* buf, size_t len);
  static int Recv(void* p, unsigned char* buf, size_t len, uint32_t timeout_ms);

  const ClientOptions* opt_ = nullptr;
  ClientStats* stats_ = nullptr;
  mbedtls_ssl_context ssl_;
  mbedtls_ssl_config conf_;
  mbedtls_hmac_drbg_context drbg_;
  uint32_t entropy_counter_ = 0;
};

}  // namespace fedrt::fw
