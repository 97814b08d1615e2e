#include "fedrt/tls/tls.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <iterator>

#include <fmt/format.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/platform_util.h>
#include <psa/crypto.h>

namespace fedrt::net {

namespace {

// TLS 1.3 suites (every key exchange mode uses them; SHA-256, the hash of
// external PSKs). The key exchange is chosen apart from the suite. A TLS 1.3
// server takes the client's first: ChaCha20-Poly1305 for fedrt-device, fast on
// ARM boards without AES instructions (the cipher its TLS 1.2 ECDHE-PSK suite had).
const int kTls13Suites[] = {MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256, MBEDTLS_TLS1_3_AES_128_GCM_SHA256};

// TLS 1.2 PSK suites in order of preference (the server's order decides, and mbedTLS
// takes the first of its own list that the client offers). ECDHE-PSK first:
// an ephemeral X25519 exchange keyed by the PSK gives forward secrecy, so a
// leaked PSK does not decrypt recorded sessions; the plain PSK suites stay
// for the firmware, which cannot afford the exchange (docs/tls.md).
const int kEcdhePskSuites[] = {MBEDTLS_TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256};
const int kPlainPskSuites[] = {MBEDTLS_TLS_PSK_WITH_AES_128_GCM_SHA256, MBEDTLS_TLS_PSK_WITH_CHACHA20_POLY1305_SHA256};
const int kCertSuites[] = {MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                           MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256};

// (EC)DHE groups in order of preference: X25519, then P-256, and no other. A TLS 1.2 server
// picks the first the client offers; a TLS 1.3 client sends its key share for its first, and
// a client whose share is for another group is asked for one of these (HelloRetryRequest).
// mbedTLS's default order starts with P-521, which costs the coordinator about 30% more CPU
// per certificate handshake (docs/tls.md). The certificates are P-256
// (keys/provision.cc), so a TLS 1.2 peer offers P-256 anyway.
const uint16_t kGroups[] = {MBEDTLS_SSL_IANA_TLS_GROUP_X25519, MBEDTLS_SSL_IANA_TLS_GROUP_SECP256R1,
                            MBEDTLS_SSL_IANA_TLS_GROUP_NONE};

constexpr uint32_t kHandshakeTimeoutMs = 15000;

// The Linux device's max_fragment_length (RFC 6066): 2048-byte records cost
// 1.4% of a large update in record overhead and let the coordinator keep
// about 4.7 KB of record buffers per session instead of 33 KB.
constexpr unsigned char kDeviceMaxFragment = MBEDTLS_SSL_MAX_FRAG_LEN_2048;

// mbedtls_net_recv_timeout uses select(), which fails for descriptors >=
// FD_SETSIZE (1024): a process with many sessions (the load driver) needs poll().
int RecvTimeoutPoll(void* ctx, unsigned char* buf, size_t len, uint32_t timeout_ms) {
  auto* net = static_cast<mbedtls_net_context*>(ctx);
  pollfd p{net->fd, POLLIN, 0};
  const int r = ::poll(&p, 1, timeout_ms == 0 ? -1 : static_cast<int>(timeout_ms));
  if (r == 0) return MBEDTLS_ERR_SSL_TIMEOUT;
  if (r < 0) return errno == EINTR ? MBEDTLS_ERR_SSL_WANT_READ : MBEDTLS_ERR_NET_RECV_FAILED;
  return mbedtls_net_recv(ctx, buf, len);
}

// A fatal alert from the coordinator during the handshake, or (TLS 1.3, whose
// client finishes before the server has checked its certificate) before any
// application data: it refused this device's credentials.
Status CredentialsRefused(const char* when) {
  return Status(StatusCode::kPermissionDenied,
                fmt::format("{}: the coordinator refused this device's credentials (a fatal alert): the id is "
                            "not in its registry, the key is not the one it holds for the id, or the id is revoked; "
                            "check --id and --key against the fleet's keys folder",
                            when));
}

Status TlsFail(const std::string& what, int rc) {
  return Status(StatusCode::kUnavailable, fmt::format("{}: {}", what, TlsErrorString(rc)));
}

// TLS 1.3, and 1.2 when allow_tls12, with kGroups for (EC)DHE; no session
// tickets (every session lasts a run: nothing to resume).
void TlsVersions(mbedtls_ssl_config* conf, bool allow_tls12) {
  mbedtls_ssl_conf_min_tls_version(conf, allow_tls12 ? MBEDTLS_SSL_VERSION_TLS1_2 : MBEDTLS_SSL_VERSION_TLS1_3);
  mbedtls_ssl_conf_max_tls_version(conf, MBEDTLS_SSL_VERSION_TLS1_3);
  mbedtls_ssl_conf_groups(conf, kGroups);
  mbedtls_ssl_conf_session_tickets(conf, MBEDTLS_SSL_SESSION_TICKETS_DISABLED);
}

// A client's PSK and its TLS 1.3 key exchange modes: psk_dhe_ke (forward
// secrecy) unless the coordinator allows only psk_ke; with forward_secrecy
// false, psk_ke only.
Status ConfigurePskClient(mbedtls_ssl_config* conf, const std::string& identity, const SecretBytes& psk,
                          bool forward_secrecy) {
  const int rc = mbedtls_ssl_conf_psk(conf, psk.data(), psk.size(), reinterpret_cast<const unsigned char*>(identity.data()),
                                      identity.size());
  if (rc != 0) return TlsFail("PSK", rc);
  mbedtls_ssl_conf_tls13_key_exchange_modes(
      conf, forward_secrecy ? MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL | MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK
                            : MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK);
  mbedtls_ssl_conf_authmode(conf, MBEDTLS_SSL_VERIFY_NONE);  // PSK authenticates both sides
  return Status::Ok();
}

// TlsPskClientConfig's suites: TLS 1.3, then TLS 1.2 ECDHE-PSK and plain PSK (TlsClientConfig's PSK list).
const int kPskClientSuites[] = {MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256, MBEDTLS_TLS1_3_AES_128_GCM_SHA256,
                                MBEDTLS_TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256,
                                MBEDTLS_TLS_PSK_WITH_AES_128_GCM_SHA256,
                                MBEDTLS_TLS_PSK_WITH_CHACHA20_POLY1305_SHA256, 0};

}  // namespace

std::string TlsErrorString(int code) {
  char buf[200];
  mbedtls_strerror(code, buf, sizeof buf);
  return fmt::format("{} (-0x{:04x})", buf, static_cast<unsigned>(-code));
}

TlsRandom::TlsRandom() {
  mbedtls_entropy_init(&entropy_);
  mbedtls_ctr_drbg_init(&drbg_);
}
TlsRandom::~TlsRandom() {
  mbedtls_ctr_drbg_free(&drbg_);
  mbedtls_entropy_free(&entropy_);
}
Status TlsRandom::init(const std::string& pers) {
  const psa_status_t ps = psa_crypto_init();  // idempotent; TLS 1.3 hashes, derives and exchanges through PSA
  if (ps != PSA_SUCCESS)
    return Status(StatusCode::kUnavailable, fmt::format("starting PSA crypto: psa_crypto_init returned {}", ps));
  const int rc = mbedtls_ctr_drbg_seed(&drbg_, mbedtls_entropy_func, &entropy_,
                                       reinterpret_cast<const unsigned char*>(pers.data()), pers.size());
  return rc == 0 ? Status::Ok() : TlsFail("seeding the random generator", rc);
}

TlsServerConfig::TlsServerConfig() {
  mbedtls_ssl_config_init(&conf_);
  mbedtls_x509_crt_init(&ca_);
  mbedtls_x509_crt_init(&cert_);
  mbedtls_pk_init(&key_);
}
TlsServerConfig::~TlsServerConfig() {
  mbedtls_pk_free(&key_);
  mbedtls_x509_crt_free(&cert_);
  mbedtls_x509_crt_free(&ca_);
  mbedtls_ssl_config_free(&conf_);
}

int TlsServerConfig::PskCallback(void* p, mbedtls_ssl_context* ssl, const unsigned char* id, size_t id_len) {
  auto* self = static_cast<TlsServerConfig*>(p);
  std::string identity(reinterpret_cast<const char*>(id), id_len);
  auto it = self->psks_.find(identity);
  if (it == self->psks_.end()) {
    self->rejected_[ssl] = identity;
    return -1;
  }
  self->identities_[ssl] = identity;
  return mbedtls_ssl_set_hs_psk(ssl, it->second.data(), it->second.size());
}

std::string TlsServerConfig::take_psk_identity(const mbedtls_ssl_context* ssl) {
  auto it = identities_.find(ssl);
  if (it == identities_.end()) return "";
  std::string id = it->second;
  identities_.erase(it);
  return id;
}

std::string TlsServerConfig::take_rejected_identity(const mbedtls_ssl_context* ssl) {
  identities_.erase(ssl);
  auto it = rejected_.find(ssl);
  if (it == rejected_.end()) return "";
  std::string id = it->second;
  rejected_.erase(it);
  return id;
}

Status TlsServerConfig::init(const std::string& ca_file, const std::string& cert_file, const std::string& key_file,
                             const std::vector<RegistryEntry>& registry, const std::string& auth, bool psk_ecdhe,
                             bool allow_tls12) {
  const bool psk = auth == "any" || auth == "psk";
  const bool cert = auth == "any" || auth == "cert";
  if (!psk && !cert)
    return Status(StatusCode::kInvalidArgument, fmt::format("network.auth '{}' (expected any, psk or cert)", auth));
  FEDRT_TRY(rng_.init("fedrt-coordinator"));
  int rc = mbedtls_ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                       MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) return TlsFail("TLS server defaults", rc);
  TlsVersions(&conf_, allow_tls12);
  // The coordinator's records to every peer: at most kDeviceMaxFragment bytes, so
  // that a TLS 1.3 session (no max_fragment_length) keeps small buffers too.
  if ((rc = mbedtls_ssl_conf_max_frag_len(&conf_, kDeviceMaxFragment)) != 0) return TlsFail("max_fragment_length", rc);
  suites_.assign(std::begin(kTls13Suites), std::end(kTls13Suites));
  int tls13_modes = 0;
  mbedtls_ssl_conf_rng(&conf_, mbedtls_ctr_drbg_random, rng_.drbg());
  if (cert) {
    if ((rc = mbedtls_x509_crt_parse_file(&ca_, ca_file.c_str())) != 0)
      return TlsFail(fmt::format("CA certificate '{}'", ca_file), rc);
    if ((rc = mbedtls_x509_crt_parse_file(&cert_, cert_file.c_str())) != 0)
      return TlsFail(fmt::format("coordinator certificate '{}'", cert_file), rc);
    if ((rc = mbedtls_pk_parse_keyfile(&key_, key_file.c_str(), nullptr, mbedtls_ctr_drbg_random, rng_.drbg())) != 0)
      return TlsFail(fmt::format("coordinator key '{}'", key_file), rc);
    if ((rc = mbedtls_ssl_conf_own_cert(&conf_, &cert_, &key_)) != 0) return TlsFail("coordinator certificate", rc);
    mbedtls_ssl_conf_ca_chain(&conf_, &ca_, nullptr);
    mbedtls_ssl_conf_authmode(&conf_, MBEDTLS_SSL_VERIFY_REQUIRED);  // mutual authentication
    for (int s : kCertSuites) suites_.push_back(s);
    tls13_modes |= MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL;  // ECDHE, signed by both sides
  }
  if (psk) {
    for (const auto& e : registry) psks_[e.id] = e.psk;
    mbedtls_ssl_conf_psk_cb(&conf_, &TlsServerConfig::PskCallback, this);
    if (psk_ecdhe) suites_.insert(suites_.end(), std::begin(kEcdhePskSuites), std::end(kEcdhePskSuites));
    suites_.insert(suites_.end(), std::begin(kPlainPskSuites), std::end(kPlainPskSuites));
    tls13_modes |= psk_ecdhe ? MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL : MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK;
  }
  mbedtls_ssl_conf_tls13_key_exchange_modes(&conf_, tls13_modes);
  suites_.push_back(0);
  mbedtls_ssl_conf_ciphersuites(&conf_, suites_.data());
  return Status::Ok();
}

std::string PeerIdentity(TlsServerConfig& config, const mbedtls_ssl_context* ssl, bool* used_psk) {
  std::string id = config.take_psk_identity(ssl);
  *used_psk = !id.empty();
  if (!id.empty()) return id;
  const mbedtls_x509_crt* peer = mbedtls_ssl_get_peer_cert(ssl);
  if (peer == nullptr) return "";
  for (const mbedtls_x509_name* n = &peer->subject; n != nullptr; n = n->next) {
    if (n->oid.p != nullptr && MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &n->oid) == 0)
      return std::string(reinterpret_cast<const char*>(n->val.p), n->val.len);
  }
  return "";
}

TlsClientConfig::TlsClientConfig() {
  mbedtls_ssl_config_init(&conf_);
  mbedtls_x509_crt_init(&ca_);
  mbedtls_x509_crt_init(&cert_);
  mbedtls_pk_init(&key_);
}
TlsClientConfig::~TlsClientConfig() {
  mbedtls_pk_free(&key_);
  mbedtls_x509_crt_free(&cert_);
  mbedtls_x509_crt_free(&ca_);
  mbedtls_ssl_config_free(&conf_);
}

Status TlsClientConfig::init(const TlsClientCredentials& creds) {
  FEDRT_TRY(rng_.init("fedrt-device-" + creds.identity));
  int rc = mbedtls_ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                       MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) return TlsFail("TLS client defaults", rc);
  TlsVersions(&conf_, true);  // TLS 1.3 first; 1.2 for a coordinator that allows no more
  suites_.assign(std::begin(kTls13Suites), std::end(kTls13Suites));
  // Records of at most kDeviceMaxFragment bytes: a coordinator whose mbedTLS
  // has variable buffers (cmake/host_mbedtls.cmake) shrinks this session's
  // record buffers to that size once the handshake ends (docs/scale.md).
  if ((rc = mbedtls_ssl_conf_max_frag_len(&conf_, kDeviceMaxFragment)) != 0) return TlsFail("max_fragment_length", rc);
  mbedtls_ssl_conf_rng(&conf_, mbedtls_ctr_drbg_random, rng_.drbg());
  psk_ = !creds.psk_file.empty();
  if (psk_) {
    auto psk = LoadPskFile(creds.psk_file);  // mbedTLS keeps (and zeroizes) its own copy; ours goes with `psk`
    if (!psk.ok()) return psk.status();
    FEDRT_TRY(ConfigurePskClient(&conf_, creds.identity, *psk, true));
    suites_.insert(suites_.end(), std::begin(kEcdhePskSuites), std::end(kEcdhePskSuites));
    suites_.insert(suites_.end(), std::begin(kPlainPskSuites), std::end(kPlainPskSuites));
  } else {
    if ((rc = mbedtls_x509_crt_parse_file(&ca_, creds.ca_file.c_str())) != 0)
      return TlsFail(fmt::format("CA certificate '{}'", creds.ca_file), rc);
    if ((rc = mbedtls_x509_crt_parse_file(&cert_, creds.cert_file.c_str())) != 0)
      return TlsFail(fmt::format("device certificate '{}'", creds.cert_file), rc);
    if ((rc = mbedtls_pk_parse_keyfile(&key_, creds.key_file.c_str(), nullptr, mbedtls_ctr_drbg_random,
                                       rng_.drbg())) != 0)
      return TlsFail(fmt::format("device key '{}'", creds.key_file), rc);
    if ((rc = mbedtls_ssl_conf_own_cert(&conf_, &cert_, &key_)) != 0) return TlsFail("device certificate", rc);
    mbedtls_ssl_conf_ca_chain(&conf_, &ca_, nullptr);
    mbedtls_ssl_conf_authmode(&conf_, MBEDTLS_SSL_VERIFY_REQUIRED);
    for (int s : kCertSuites) suites_.push_back(s);
    mbedtls_ssl_conf_tls13_key_exchange_modes(&conf_, MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL);
  }
  suites_.push_back(0);
  mbedtls_ssl_conf_ciphersuites(&conf_, suites_.data());
  return Status::Ok();
}

TlsPskClientConfig::TlsPskClientConfig() { mbedtls_ssl_config_init(&conf_); }
TlsPskClientConfig::~TlsPskClientConfig() { mbedtls_ssl_config_free(&conf_); }

Status TlsPskClientConfig::init(const std::string& identity, const SecretBytes& psk, TlsRandom& rng,
                                bool forward_secrecy) {
  int rc = mbedtls_ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                       MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) return TlsFail("TLS client defaults", rc);
  TlsVersions(&conf_, true);
  if ((rc = mbedtls_ssl_conf_max_frag_len(&conf_, kDeviceMaxFragment)) != 0) return TlsFail("max_fragment_length", rc);
  mbedtls_ssl_conf_rng(&conf_, mbedtls_ctr_drbg_random, rng.drbg());
  FEDRT_TRY(ConfigurePskClient(&conf_, identity, psk, forward_secrecy));
  mbedtls_ssl_conf_ciphersuites(&conf_, kPskClientSuites);
  return Status::Ok();
}

TlsClient::TlsClient() {
  mbedtls_ssl_init(&ssl_);
  mbedtls_net_init(&net_);
}
TlsClient::~TlsClient() {
  close();
  mbedtls_ssl_free(&ssl_);
}

Status TlsClient::init(const TlsClientCredentials& creds) {
  FEDRT_TRY(config_.init(creds));
  int rc;
  if ((rc = mbedtls_ssl_setup(&ssl_, config_.conf())) != 0) return TlsFail("TLS setup", rc);
  if (!config_.psk()) mbedtls_ssl_set_hostname(&ssl_, "fedrt-coordinator");
  ssl_ready_ = true;
  return Status::Ok();
}

Status TlsClient::connect(const std::string& host, uint16_t port, uint32_t read_timeout_ms) {
  close();
  mbedtls_ssl_session_reset(&ssl_);
  const std::string p = std::to_string(port);
  int rc = mbedtls_net_connect(&net_, host.c_str(), p.c_str(), MBEDTLS_NET_PROTO_TCP);
  if (rc != 0) return TlsFail(fmt::format("connect {}:{}", host, port), rc);
  // The protocol sends small frames and waits for the answer: without
  // TCP_NODELAY, Nagle's algorithm holds each one until the peer's delayed
  // acknowledgement (about 40 ms on Linux).
  const int one = 1;
  ::setsockopt(net_.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A busy coordinator serves handshakes one after the other: allow it time.
  mbedtls_ssl_conf_read_timeout(config_.conf(), kHandshakeTimeoutMs);
  mbedtls_ssl_set_bio(&ssl_, &net_, mbedtls_net_send, nullptr, RecvTimeoutPoll);
  while ((rc = mbedtls_ssl_handshake(&ssl_)) != 0) {
    if (rc != MBEDTLS_ERR_SSL_WANT_READ && rc != MBEDTLS_ERR_SSL_WANT_WRITE) {
      mbedtls_net_free(&net_);
      if (rc == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE)  // the peer refused our credentials: retrying will not mend it
        return CredentialsRefused("TLS handshake");
      return TlsFail("TLS handshake", rc);
    }
  }
  mbedtls_ssl_conf_read_timeout(config_.conf(), read_timeout_ms);
  connected_ = true;
  received_ = false;
  return Status::Ok();
}

Status TlsClient::write_all(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const int rc = mbedtls_ssl_write(&ssl_, reinterpret_cast<const unsigned char*>(bytes.data()) + off,
                                     bytes.size() - off);
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) continue;
    if (rc < 0) {
      close();
      return TlsFail("TLS write", rc);
    }
    off += static_cast<size_t>(rc);
  }
  return Status::Ok();
}

Result<size_t> TlsClient::read_some(uint8_t* buf, size_t cap) {
  const int rc = mbedtls_ssl_read(&ssl_, buf, cap);
  const bool tls13 = mbedtls_ssl_get_version_number(&ssl_) == MBEDTLS_SSL_VERSION_TLS1_3;
  if (rc > 0) {
    received_ = true;
    return static_cast<size_t>(rc);
  }
  if (rc == MBEDTLS_ERR_SSL_TIMEOUT || rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE)
    return size_t(0);
  close();
  if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
    return Status(StatusCode::kUnavailable, std::string("connection closed by the coordinator"));
  // TLS 1.3: the coordinator checks a client certificate after the client's handshake has
  // ended, and its alert is protected with its handshake keys, which the client no longer
  // reads with: a fatal alert, or a record that does not decrypt, before any data.
  if (!received_ && (rc == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE || (tls13 && rc == MBEDTLS_ERR_SSL_INVALID_MAC)))
    return CredentialsRefused("after the TLS handshake");
  return TlsFail("TLS read", rc);
}

void TlsClient::close() {
  if (connected_) mbedtls_ssl_close_notify(&ssl_);
  connected_ = false;
  mbedtls_net_free(&net_);
}

}  // namespace fedrt::net
