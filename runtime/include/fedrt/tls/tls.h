#pragma once
// TLS 1.3 (and 1.2 where network.tls_min_version allows it) with mbedTLS 3.6
// (docs/security.md, "TLS"): pre-shared keys with one identity per device
// and mutual certificate authentication, both with an ephemeral (EC)DHE
// exchange on X25519 first, P-256 second. TLS 1.2 only when
// network.tls_min_version = "1.2" asks for it. Host code.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "fedrt/core/status.h"
#include "fedrt/tls/secret_bytes.h"

namespace fedrt::net {

// mbedTLS error code as text ("SSL - ...").
std::string TlsErrorString(int code);

// Reads a PSK file (hex, one line) into bytes; 16..64 bytes. The file's text
// is zeroized once decoded.
Result<SecretBytes> LoadPskFile(const std::string& path);
std::vector<uint8_t> HexToBytes(const std::string& hex, bool* ok);
SecretBytes HexToSecret(const std::string& hex, bool* ok);  // the same, into zeroized storage
std::string BytesToHex(const uint8_t* data, size_t n);

// One device of the fleet registry (keys/registry.tsv): id, agent index, PSK.
struct RegistryEntry {
  std::string id;
  uint32_t index = 0;
  SecretBytes psk;
};
// Reads "id<TAB>index<TAB>psk_hex" lines; errors name the line.
Result<std::vector<RegistryEntry>> LoadRegistry(const std::string& path);

// Entropy + CTR-DRBG seeded from the OS; init() also starts PSA crypto,
// which mbedTLS 3.6's TLS 1.3 needs before any handshake.
class TlsRandom {
 public:
  TlsRandom();
  ~TlsRandom();
  TlsRandom(const TlsRandom&) = delete;
  TlsRandom& operator=(const TlsRandom&) = delete;
  Status init(const std::string& personalization);
  mbedtls_ctr_drbg_context* drbg() { return &drbg_; }

 private:
  mbedtls_entropy_context entropy_;
  mbedtls_ctr_drbg_context drbg_;
};

// Server (coordinator) configuration shared by every connection.
class TlsServerConfig {
 public:
  TlsServerConfig();
  ~TlsServerConfig();
  TlsServerConfig(const TlsServerConfig&) = delete;
  TlsServerConfig& operator=(const TlsServerConfig&) = delete;

  // ca/cert/key: PEM files (CA that signs device certificates, the coordinator's
  // certificate and key); psks: identity -> key. auth: "any", "psk" or "cert".
  // psk_ecdhe: PSK with an ephemeral X25519/P-256 exchange (forward secrecy):
  // TLS 1.3 psk_dhe_ke, and ECDHE-PSK before the plain PSK suites of TLS 1.2;
  // false: TLS 1.3 psk_ke and plain PSK only. allow_tls12: accept peers that
  // speak only TLS 1.2 (network.tls_min_version = "1.2"); TLS 1.3 otherwise.
  Status init(const std::string& ca_file, const std::string& cert_file, const std::string& key_file,
              const std::vector<RegistryEntry>& registry, const std::string& auth, bool psk_ecdhe = true,
              bool allow_tls12 = false);
  const mbedtls_ssl_config* conf() const { return &conf_; }
  // A device provisioned while running (`keys add`): its PSK is accepted from
  // the next handshake on (certificates need nothing: the CA signed them).
  void add_psk(const std::string& id, const SecretBytes& psk) { psks_[id] = psk; }

  // The PSK identity the handshake of `ssl` used ("" for certificate suites);
  // forgets it. Unknown identities are recorded in last_unknown_identity.
  std::string take_psk_identity(const mbedtls_ssl_context* ssl);
  std::string take_rejected_identity(const mbedtls_ssl_context* ssl);

 private:
  static int PskCallback(void* self, mbedtls_ssl_context* ssl, const unsigned char* id, size_t id_len);
  TlsRandom rng_;
  mbedtls_ssl_config conf_;
  mbedtls_x509_crt ca_;
  mbedtls_x509_crt cert_;
  mbedtls_pk_context key_;
  std::map<std::string, SecretBytes> psks_;
  std::map<const mbedtls_ssl_context*, std::string> identities_;
  std::map<const mbedtls_ssl_context*, std::string> rejected_;
  std::vector<int> suites_;
};

// The authenticated identity of a finished server-side handshake: the PSK
// identity, or the CN of the verified client certificate.
std::string PeerIdentity(TlsServerConfig& config, const mbedtls_ssl_context* ssl, bool* used_psk);

// Client credentials: PSK (identity = device id) or certificate + key; the CA
// verifies the coordinator's certificate in certificate mode.
struct TlsClientCredentials {
  std::string identity;
  std::string psk_file;   // PSK mode when non-empty
  std::string ca_file;    // certificate mode
  std::string cert_file;
  std::string key_file;
};

// A client configuration: TLS 1.3 first, PSK (with psk_dhe_ke) or a
// certificate; used by the blocking TlsClient and by a gateway's upstream
// link (gateway/upstream.h).
class TlsClientConfig {
 public:
  TlsClientConfig();
  ~TlsClientConfig();
  TlsClientConfig(const TlsClientConfig&) = delete;
  TlsClientConfig& operator=(const TlsClientConfig&) = delete;
  Status init(const TlsClientCredentials& creds);
  mbedtls_ssl_config* conf() { return &conf_; }
  bool psk() const { return psk_; }

 private:
  TlsRandom rng_;
  mbedtls_ssl_config conf_;
  mbedtls_x509_crt ca_;
  mbedtls_x509_crt cert_;
  mbedtls_pk_context key_;
  std::vector<int> suites_;
  bool psk_ = false;
};

// A PSK client configuration for one of many identities in one process
// (bench/fedrt_swarm.cc): the settings of TlsClientConfig's PSK mode, but
// the random generator is borrowed (one per process, not one per identity:
// an entropy source and a CTR-DRBG are most of a TlsClientConfig) and the
// suites are static. What stays per identity is the mbedtls_ssl_config and
// mbedTLS's copies of the PSK and the identity. A TLS 1.3 client offers the
// PSK of its configuration, so the identities cannot share one.
// forward_secrecy = false offers psk_ke only (no X25519 on either side),
// which a coordinator with network.psk_forward_secrecy = false accepts.
class TlsPskClientConfig {
 public:
  TlsPskClientConfig();
  ~TlsPskClientConfig();
  TlsPskClientConfig(const TlsPskClientConfig&) = delete;
  TlsPskClientConfig& operator=(const TlsPskClientConfig&) = delete;
  // `rng` outlives this configuration and the sessions set up with it.
  Status init(const std::string& identity, const SecretBytes& psk, TlsRandom& rng, bool forward_secrecy = true);
  const mbedtls_ssl_config* conf() const { return &conf_; }

 private:
  mbedtls_ssl_config conf_;
};

// A blocking client session (fedrt-device) over a TCP socket.
class TlsClient {
 public:
  TlsClient();
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  Status init(const TlsClientCredentials& creds);
  // Connects and completes the handshake (timeout in ms for each read).
  Status connect(const std::string& host, uint16_t port, uint32_t read_timeout_ms);
  // Writes all bytes.
  Status write_all(const std::string& bytes);
  // Reads some bytes: >0 bytes, 0 on timeout, error on close/failure
  // (kPermissionDenied: a fatal alert before any data, the credentials refused).
  Result<size_t> read_some(uint8_t* buf, size_t cap);
  void close();
  bool connected() const { return connected_; }
  // The negotiated suite's IANA name ("" before a handshake).
  const char* suite() const { return connected_ ? mbedtls_ssl_get_ciphersuite(&ssl_) : ""; }
  // The negotiated protocol version ("TLSv1.3", "TLSv1.2"; "" before a handshake).
  const char* version() const { return connected_ ? mbedtls_ssl_get_version(&ssl_) : ""; }

 private:
  TlsClientConfig config_;
  mbedtls_ssl_context ssl_;
  mbedtls_net_context net_;
  bool ssl_ready_ = false;
  bool connected_ = false;
  bool received_ = false;  // application data came in since the handshake
};

}  // namespace fedrt::net
