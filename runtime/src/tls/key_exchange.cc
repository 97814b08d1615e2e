#include "fedrt/tls/key_exchange.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace fedrt::net {

namespace {

constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kServerHello = 2;
constexpr uint8_t kServerKeyExchange = 12;
constexpr uint16_t kKeyShareExtension = 51;
constexpr uint8_t kNamedCurve = 3;  // ECParameters.curve_type (RFC 8422)

// A bounded reader over one message: every read checks what is left.
struct Reader {
  const uint8_t* p;
  size_t left;
  bool take(size_t n, const uint8_t** out = nullptr) {
    if (n > left) return false;
    if (out != nullptr) *out = p;
    p += n;
    left -= n;
    return true;
  }
  bool u8(uint8_t& v) {
    const uint8_t* q;
    if (!take(1, &q)) return false;
    v = q[0];
    return true;
  }
  bool u16(uint16_t& v) {
    const uint8_t* q;
    if (!take(2, &q)) return false;
    v = static_cast<uint16_t>(q[0] << 8 | q[1]);
    return true;
  }
};

// TLS 1.3 ServerHello (RFC 8446, 4.1.3): the key_share extension's group.
// A HelloRetryRequest carries the group alone; the ServerHello after it wins.
bool ServerHelloGroup(Reader r, uint16_t& group) {
  uint8_t sid_len = 0;
  uint16_t ext_len = 0;
  if (!r.take(2 + 32) || !r.u8(sid_len) || !r.take(sid_len) || !r.take(2 + 1) || !r.u16(ext_len)) return false;
  Reader ext{r.p, ext_len <= r.left ? ext_len : r.left};
  uint16_t type = 0, len = 0;
  while (ext.u16(type) && ext.u16(len)) {
    const uint8_t* body;
    if (!ext.take(len, &body)) return false;
    if (type == kKeyShareExtension && len >= 2) {
      group = static_cast<uint16_t>(body[0] << 8 | body[1]);
      return true;
    }
  }
  return false;
}

// TLS 1.2 ServerKeyExchange (RFC 8422, 5.4; RFC 5489 for ECDHE-PSK, whose
// parameters follow the PSK identity hint): the named curve.
bool ServerKeyExchangeGroup(Reader r, bool psk, uint16_t& group) {
  uint16_t hint_len = 0;
  if (psk && (!r.u16(hint_len) || !r.take(hint_len))) return false;
  uint8_t curve_type = 0;
  return r.u8(curve_type) && curve_type == kNamedCurve && r.u16(group);
}

}  // namespace

void ServerFlight::observe(const unsigned char* data, size_t n) {
  if (done_) return;
  bytes_.append(reinterpret_cast<const char*>(data), std::min(n, kMaxBytes - bytes_.size()));
  // Stop at the first record that is not a plaintext handshake record.
  size_t off = 0;
  while (off + 5 <= bytes_.size()) {
    if (static_cast<uint8_t>(bytes_[off]) != kHandshakeRecord) {
      done_ = true;
      bytes_.resize(off);
      break;
    }
    off += 5 + (static_cast<uint8_t>(bytes_[off + 3]) << 8 | static_cast<uint8_t>(bytes_[off + 4]));
  }
  if (bytes_.size() >= kMaxBytes) done_ = true;
}

std::string ServerFlight::take_group(const mbedtls_ssl_context* ssl) {
  const bool tls13 = mbedtls_ssl_get_version_number(ssl) == MBEDTLS_SSL_VERSION_TLS1_3;
  const char* suite = mbedtls_ssl_get_ciphersuite(ssl);
  const bool psk = suite != nullptr && std::strstr(suite, "PSK") != nullptr;
  // The handshake messages of the plaintext records, concatenated.
  std::string msgs;
  for (size_t off = 0; off + 5 <= bytes_.size();) {
    const size_t len = static_cast<uint8_t>(bytes_[off + 3]) << 8 | static_cast<uint8_t>(bytes_[off + 4]);
    msgs.append(bytes_, off + 5, std::min(len, bytes_.size() - off - 5));
    off += 5 + len;
  }
  bytes_.clear();
  bytes_.shrink_to_fit();
  done_ = true;
  uint16_t group = 0;
  bool found = false;
  const auto* p = reinterpret_cast<const uint8_t*>(msgs.data());
  for (size_t off = 0; off + 4 <= msgs.size();) {
    const uint8_t type = p[off];
    const size_t len = static_cast<size_t>(p[off + 1]) << 16 | static_cast<size_t>(p[off + 2]) << 8 | p[off + 3];
    Reader body{p + off + 4, std::min(len, msgs.size() - off - 4)};
    uint16_t g = 0;
    if (tls13 && type == kServerHello && ServerHelloGroup(body, g)) group = g, found = true;
    if (!tls13 && type == kServerKeyExchange && ServerKeyExchangeGroup(body, psk, g)) group = g, found = true;
    off += 4 + len;
  }
  return found ? TlsGroupName(group) : "none";
}

std::string TlsSessionName(const mbedtls_ssl_context* ssl, ServerFlight& flight) {
  return fmt::format("{}/{}", mbedtls_ssl_get_version(ssl), flight.take_group(ssl));
}

std::string TlsGroupName(uint16_t group) {
  switch (group) {
    case MBEDTLS_SSL_IANA_TLS_GROUP_X25519: return "X25519";
    case MBEDTLS_SSL_IANA_TLS_GROUP_SECP256R1: return "P-256";
    case MBEDTLS_SSL_IANA_TLS_GROUP_SECP384R1: return "P-384";
    case MBEDTLS_SSL_IANA_TLS_GROUP_SECP521R1: return "P-521";
    case MBEDTLS_SSL_IANA_TLS_GROUP_X448: return "X448";
    default: return fmt::format("group 0x{:04x}", group);
  }
}

}  // namespace fedrt::net
