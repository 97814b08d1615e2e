#include "tls_link.h"

#include <cstring>

#include <mbedtls/md.h>
#include <mbedtls/memory_buffer_alloc.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/sha256.h>

#include "fedrt/config/limits.h"
#include "fedrt/fw/log_line.h"

#ifndef FEDRT_FW_TLS_HEAP_BYTES
#define FEDRT_FW_TLS_HEAP_BYTES 8192  // TLS session (about 3.9 KB) + X25519 bignums of a SecAgg+ phase
#endif

namespace fedrt::fw {

namespace {

constexpr uint32_t kDrainQuietMs = 500;  // link silent this long after a failed session = drained
constexpr int kDrainMaxRounds = 20;

alignas(8) unsigned char g_tls_heap[FEDRT_FW_TLS_HEAP_BYTES];

uint32_t ReadBe32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

}  // namespace

// DRBG entropy: SHA-256(seed || counter) blocks. The boards have no TRNG; the
// seed is provisioned per device (and per launch by the fleet).
int TlsLink::Entropy(void* p, unsigned char* out, size_t len) {
  auto* self = static_cast<TlsLink*>(p);
  const Identity& id = self->opt_->identity;
  while (len > 0) {
    unsigned char block[32];
    unsigned char ctr[4];
    const uint32_t c = self->entropy_counter_++;
    for (int i = 0; i < 4; ++i) ctr[i] = static_cast<unsigned char>(c >> (8 * i));
    mbedtls_sha256_context sha;
    mbedtls_sha256_init(&sha);
    const bool ok = mbedtls_sha256_starts_ret(&sha, 0) == 0 &&
                    mbedtls_sha256_update_ret(&sha, id.entropy_seed, id.entropy_seed_len) == 0 &&
                    mbedtls_sha256_update_ret(&sha, ctr, sizeof ctr) == 0 && mbedtls_sha256_finish_ret(&sha, block) == 0;
    mbedtls_sha256_free(&sha);
    if (!ok) return -1;
    const size_t k = len < sizeof block ? len : sizeof block;
    std::memcpy(out, block, k);
    out += k;
    len -= k;
  }
  return 0;
}

int TlsLink::Send(void* p, const unsigned char* buf, size_t len) {
  const ByteLink& l = static_cast<TlsLink*>(p)->opt_->link;
  const int r = l.write(l.ctx, buf, len);
  if (r > 0) return r;
  return r == 0 ? MBEDTLS_ERR_SSL_WANT_WRITE : MBEDTLS_ERR_NET_SEND_FAILED;
}

int TlsLink::Recv(void* p, unsigned char* buf, size_t len, uint32_t timeout_ms) {
  const ByteLink& l = static_cast<TlsLink*>(p)->opt_->link;
  const int r = l.read(l.ctx, buf, len, timeout_ms == 0 ? 0xFFFFFFFFu : timeout_ms);
  if (r > 0) return r;
  return r == 0 ? MBEDTLS_ERR_SSL_TIMEOUT : MBEDTLS_ERR_NET_CONN_RESET;
}

void TlsLink::log(const char* line) const {
  if (opt_ != nullptr && opt_->log != nullptr) opt_->log(opt_->log_ctx, line);
}

void TlsLink::log_tls(const char* what, int rc) const {
  LogLine l;
  l.add(what).add(": mbedtls -0x").add_hex(static_cast<uint32_t>(-rc));
  log(l.c_str());
}

Status TlsLink::init(const ClientOptions* opt, ClientStats* stats) {
  opt_ = opt;
  stats_ = stats;
  mbedtls_memory_buffer_alloc_init(g_tls_heap, sizeof g_tls_heap);
  mbedtls_ssl_init(&ssl_);
  mbedtls_ssl_config_init(&conf_);
  mbedtls_hmac_drbg_init(&drbg_);
  const Identity& id = opt->identity;
  int rc = mbedtls_hmac_drbg_seed(&drbg_, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), Entropy, this,
                                  reinterpret_cast<const unsigned char*>(id.device_id), std::strlen(id.device_id));
  if (rc != 0) return Status::Internal("seeding the TLS random generator failed");
  rc = mbedtls_ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                   MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) return Status::Internal("mbedtls_ssl_config_defaults failed");
  static const int kSuites[] = {MBEDTLS_TLS_PSK_WITH_CHACHA20_POLY1305_SHA256, 0};
  mbedtls_ssl_conf_ciphersuites(&conf_, kSuites);
  mbedtls_ssl_conf_min_version(&conf_, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_max_version(&conf_, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_rng(&conf_, mbedtls_hmac_drbg_random, &drbg_);
  if (mbedtls_ssl_conf_max_frag_len(&conf_, MBEDTLS_SSL_MAX_FRAG_LEN_1024) != 0)
    return Status::Internal("max_fragment_length not supported");
  rc = mbedtls_ssl_conf_psk(&conf_, id.psk, id.psk_len, reinterpret_cast<const unsigned char*>(id.device_id),
                            std::strlen(id.device_id));
  if (rc != 0) return Status::ResourceExhausted("storing the PSK failed (TLS heap too small?)");
  mbedtls_ssl_conf_read_timeout(&conf_, opt->handshake_timeout_ms);
  if (mbedtls_ssl_setup(&ssl_, &conf_) != 0) return Status::ResourceExhausted("mbedtls_ssl_setup failed (TLS heap too small?)");
  mbedtls_ssl_set_bio(&ssl_, this, Send, nullptr, Recv);
  return Status::Ok();
}

Status TlsLink::handshake() {
  mbedtls_ssl_conf_read_timeout(&conf_, opt_->handshake_timeout_ms);
  int rc = mbedtls_ssl_session_reset(&ssl_);
  if (rc != 0) return Status::Internal("TLS session reset failed");
  while ((rc = mbedtls_ssl_handshake(&ssl_)) != 0) {
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) continue;
    log_tls("handshake failed", rc);
    return Status(StatusCode::kUnavailable, "TLS handshake failed");
  }
  mbedtls_ssl_conf_read_timeout(&conf_, opt_->idle_timeout_ms);
  ++stats_->sessions;
  LogLine l;
  l.add("connected suite=").add(mbedtls_ssl_get_ciphersuite(&ssl_));
  log(l.c_str());
  return Status::Ok();
}

void TlsLink::end_session() {
  mbedtls_ssl_close_notify(&ssl_);  // best effort
  const ByteLink& l = opt_->link;
  if (l.reconnect != nullptr) {
    if (l.reconnect(l.ctx) != 0) log("reconnect failed; retrying");
    return;
  }
  // A UART: drop what is still in flight from the old session until the link is quiet.
  uint8_t scratch[64];
  for (int i = 0; i < kDrainMaxRounds; ++i)
    if (l.read(l.ctx, scratch, sizeof scratch, kDrainQuietMs) <= 0) return;
}

Status TlsLink::write_all(const uint8_t* data, size_t n) {
  while (n > 0) {
    const int rc = mbedtls_ssl_write(&ssl_, data, n);
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE || rc == MBEDTLS_ERR_SSL_WANT_READ) continue;
    if (rc < 0) {
      log_tls("write failed", rc);
      return Status(StatusCode::kUnavailable, "TLS write failed");
    }
    data += rc;
    n -= static_cast<size_t>(rc);
  }
  return Status::Ok();
}

Status TlsLink::send_frame(uint8_t* body, size_t n) {
  uint8_t* head = body - 4;
  head[0] = static_cast<uint8_t>(n >> 24);
  head[1] = static_cast<uint8_t>(n >> 16);
  head[2] = static_cast<uint8_t>(n >> 8);
  head[3] = static_cast<uint8_t>(n);
  return write_all(head, 4 + n);
}

// Exactly n plaintext bytes: 0, or the mbedTLS error code.
int TlsLink::read_exact(uint8_t* dst, size_t n) {
  while (n > 0) {
    const int rc = mbedtls_ssl_read(&ssl_, dst, n);
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) continue;
    if (rc == 0) return MBEDTLS_ERR_SSL_CONN_EOF;
    if (rc < 0) return rc;
    dst += rc;
    n -= static_cast<size_t>(rc);
  }
  return 0;
}

TlsLink::Frame TlsLink::read_frame(uint8_t* buf, size_t cap, size_t& len) {
  uint8_t head[4];
  int rc = read_exact(head, 4);
  if (rc == 0) {
    const uint32_t n = ReadBe32(head);
    if (n != 0 && n <= cap) {
      rc = read_exact(buf, n);
      if (rc == 0) {
        len = n;
        return Frame::kOk;
      }
    } else {
      ++stats_->rejected_frames;
      LogLine l;
      l.add("rejected frame: ").add(StatusCodeName(n == 0 ? StatusCode::kInvalidArgument : StatusCode::kOutOfRange))
          .add(": frame of ").add_u(n).add(" bytes, limit ").add_u(cap);
      if (n > config::kMaxFrameBytes) {  // no host sends it: the stream is not frames any more
        l.add("; starting a new session");
        log(l.c_str());
        return Frame::kEnd;
      }
      l.add("; skipped");
      log(l.c_str());
      for (uint32_t left = n; left > 0 && rc == 0;) {  // resync: skip the body
        const uint32_t k = left < cap ? left : static_cast<uint32_t>(cap);
        rc = read_exact(buf, k);
        left -= k;
      }
      if (rc == 0) return Frame::kSkipped;
    }
  }
  if (rc == MBEDTLS_ERR_SSL_INVALID_MAC || rc == MBEDTLS_ERR_SSL_INVALID_RECORD || rc == MBEDTLS_ERR_SSL_BAD_INPUT_DATA) {
    ++stats_->rejected_records;
    log_tls("rejected TLS record: DATA_LOSS", rc);
  } else if (rc == MBEDTLS_ERR_SSL_TIMEOUT) {
    log("coordinator silent for too long: new session");
  } else if (rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || rc == MBEDTLS_ERR_SSL_CONN_EOF) {
    log("coordinator closed the session");
  } else {
    log_tls("session failed", rc);
  }
  return Frame::kEnd;
}

int TlsLink::random(uint8_t* out, size_t n) { return mbedtls_hmac_drbg_random(&drbg_, out, n) == 0 ? 0 : -1; }

size_t TlsLink::heap_high_water() const {
  size_t max_used = 0, max_blocks = 0;
  mbedtls_memory_buffer_alloc_max_get(&max_used, &max_blocks);
  return max_used;
}

size_t TlsLink::heap_bytes() const { return sizeof g_tls_heap; }

}  // namespace fedrt::fw
