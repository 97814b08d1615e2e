#pragma once
// The (EC)DHE group a server-side handshake used, read from the server's own
// plaintext handshake messages as they leave (mbedTLS 3.6 has no accessor
// for it once the handshake is over): TLS 1.3's ServerHello key_share, TLS
// 1.2's ServerKeyExchange. The coordinator names it in its log line for each
// device (docs/security.md, "TLS"). Host code.

#include <cstddef>
#include <cstdint>
#include <string>

#include <mbedtls/ssl.h>

namespace fedrt::net {

// Watches the bytes a server sends during its handshake. Keeps at most
// kMaxBytes of them (the plaintext part of the flight), and none once done.
class ServerFlight {
 public:
  static constexpr size_t kMaxBytes = 4096;
  // Bytes the server wrote to the socket, in order.
  void observe(const unsigned char* data, size_t n);
  // The group's name ("X25519", "P-256", ...; "none" for a key exchange
  // without one, e.g. TLS 1.2 plain PSK); forgets the bytes.
  std::string take_group(const mbedtls_ssl_context* ssl);

 private:
  std::string bytes_;
  bool done_ = false;  // an encrypted or ChangeCipherSpec record went out
};

// "TLSv1.3/X25519": the negotiated version and group of a finished handshake.
std::string TlsSessionName(const mbedtls_ssl_context* ssl, ServerFlight& flight);

// A TLS NamedGroup's name ("X25519", "P-256", ...; "group 0x...." for others).
std::string TlsGroupName(uint16_t group);

}  // namespace fedrt::net
