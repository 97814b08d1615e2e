#include "tls_link.h"

#include <cstring>

#include <mbedtls/md.h>
#include <mbedtls/memory_buffer_alloc.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/sha256.h>
#include <psa/crypto.h>

#include "fedrt/task/limits.h"
#include "fedrt/fw/log_line.h"

namespace fedrt::fw {

namespace {

uint32_t ReadBe32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

}  // namespace

namespace {
// The DRBG PSA crypto draws from (one TlsLink per program, as for the heap).
mbedtls_hmac_drbg_context* g_psa_drbg = nullptr;
}  // namespace
}  // namespace fedrt::fw

// PSA crypto's random generator (MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG): the link's
// HMAC_DRBG, so TLS 1.3's ephemeral keys come from the provisioned seed.
extern "C" psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t*, uint8_t* output,
                                                        size_t output_size, size_t* output_length) {
  *output_length = 0;
  if (fedrt::fw::g_psa_drbg == nullptr) return PSA_ERROR_INSUFFICIENT_ENTROPY;
  if (mbedtls_hmac_drbg_random(fedrt::fw::g_psa_drbg, output, output_size) != 0) return PSA_ERROR_HARDWARE_FAILURE;
  *output_length = output_size;
  return PSA_SUCCESS;
}

namespace fedrt::fw {

// DRBG entropy: the link's entropy source, else SHA-256(seed || counter)
// blocks (the mps2 boards have no TRNG; the seed is provisioned per device and
// per launch by the fleet).
int TlsLink::Entropy(void* p, unsigned char* out, size_t len) {
  auto* self = static_cast<TlsLink*>(p);
  const ByteLink& l = self->opt_->link;
  if (l.entropy != nullptr) return l.entropy(l.ctx, out, len) == 0 ? 0 : -1;
  const Identity& id = self->opt_->identity;
  while (len > 0) {
    unsigned char block[32];
    unsigned char ctr[4];
    const uint32_t c = self->entropy_counter_++;
    for (int i = 0; i < 4; ++i) ctr[i] = static_cast<unsigned char>(c >> (8 * i));
    mbedtls_sha256_context sha;
    mbedtls_sha256_init(&sha);
    const bool ok = mbedtls_sha256_starts(&sha, 0) == 0 &&
                    mbedtls_sha256_update(&sha, id.entropy_seed, id.entropy_seed_len) == 0 &&
                    mbedtls_sha256_update(&sha, ctr, sizeof ctr) == 0 && mbedtls_sha256_finish(&sha, block) == 0;
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
  auto* self = static_cast<TlsLink*>(p);
  const ByteLink& l = self->opt_->link;
  const int r = l.write(l.ctx, buf, len);
  self->want_write_ = r == 0;
  if (r > 0) return r;
  return r == 0 ? MBEDTLS_ERR_SSL_WANT_WRITE : MBEDTLS_ERR_NET_SEND_FAILED;
}

int TlsLink::Recv(void* p, unsigned char* buf, size_t len) {
  auto* self = static_cast<TlsLink*>(p);
  const ByteLink& l = self->opt_->link;
  const int r = l.read(l.ctx, buf, len);
  self->want_write_ = false;
  if (r > 0) {
    self->touch();
    return r;
  }
  return r == 0 ? MBEDTLS_ERR_SSL_WANT_READ : MBEDTLS_ERR_NET_CONN_RESET;
}

uint32_t TlsLink::now() const { return opt_->link.now_ms(opt_->link.ctx); }

void TlsLink::log(const char* line) const {
  if (opt_ != nullptr && opt_->log != nullptr) opt_->log(opt_->log_ctx, line);
}

void TlsLink::log_tls(const char* what, int rc) const {
  LogLine l;
  l.add(what).add(": mbedtls -0x").add_hex(static_cast<uint32_t>(-rc));
  log(l.c_str());
}

Status TlsLink::init(const ClientOptions* opt, ClientStats* stats, uint8_t* heap, size_t heap_bytes) {
  opt_ = opt;
  stats_ = stats;
  heap_bytes_ = heap_bytes;
  mbedtls_memory_buffer_alloc_init(heap, heap_bytes);
  mbedtls_ssl_init(&ssl_);
  mbedtls_ssl_config_init(&conf_);
  mbedtls_hmac_drbg_init(&drbg_);
  const Identity& id = opt->identity;
  int rc = mbedtls_hmac_drbg_seed(&drbg_, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), Entropy, this,
                                  reinterpret_cast<const unsigned char*>(id.device_id), std::strlen(id.device_id));
  if (rc != 0) return Status::Internal("seeding the TLS random generator failed");
  g_psa_drbg = &drbg_;
  if (psa_crypto_init() != PSA_SUCCESS) return Status::ResourceExhausted("psa_crypto_init failed (TLS heap too small?)");
  rc = mbedtls_ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                   MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) return Status::Internal("mbedtls_ssl_config_defaults failed");
  // TLS 1.3, ChaCha20-Poly1305, psk_dhe_ke over X25519, or psk_ke when the
  // coordinator allows only that (runtime/fw/fw_mbedtls_config.h).
  static const int kSuites[] = {MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256, 0};
  static const uint16_t kGroups[] = {MBEDTLS_SSL_IANA_TLS_GROUP_X25519, MBEDTLS_SSL_IANA_TLS_GROUP_NONE};
  mbedtls_ssl_conf_groups(&conf_, kGroups);
  mbedtls_ssl_conf_tls13_key_exchange_modes(
      &conf_, MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL | MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK);
  mbedtls_ssl_conf_ciphersuites(&conf_, kSuites);
  mbedtls_ssl_conf_min_tls_version(&conf_, MBEDTLS_SSL_VERSION_TLS1_3);
  mbedtls_ssl_conf_max_tls_version(&conf_, MBEDTLS_SSL_VERSION_TLS1_3);
  mbedtls_ssl_conf_rng(&conf_, mbedtls_hmac_drbg_random, &drbg_);
  rc = mbedtls_ssl_conf_psk(&conf_, id.psk, id.psk_len, reinterpret_cast<const unsigned char*>(id.device_id),
                            std::strlen(id.device_id));
  if (rc != 0) return Status::ResourceExhausted("storing the PSK failed (TLS heap too small?)");
  if (mbedtls_ssl_setup(&ssl_, &conf_) != 0) return Status::ResourceExhausted("mbedtls_ssl_setup failed (TLS heap too small?)");
  mbedtls_ssl_set_bio(&ssl_, this, Send, Recv, nullptr);
  return Status::Ok();
}

Status TlsLink::reset() {
  rd_stage_ = 0;
  rd_pos_ = 0;
  wr_left_ = 0;
  touch();
  return mbedtls_ssl_session_reset(&ssl_) == 0 ? Status::Ok() : Status::Internal("TLS session reset failed");
}

TlsLink::Io TlsLink::handshake_step() {
  const int rc = mbedtls_ssl_handshake(&ssl_);
  if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) return Io::kPending;
  if (rc != 0) {
    log_tls("handshake failed", rc);
    return Io::kEnd;
  }
  ++stats_->sessions;
  LogLine l;
  l.add("connected ").add(mbedtls_ssl_get_version(&ssl_)).add(" suite=").add(mbedtls_ssl_get_ciphersuite(&ssl_));
  log(l.c_str());
  return Io::kDone;
}

void TlsLink::close_notify() { mbedtls_ssl_close_notify(&ssl_); }

int TlsLink::drain(size_t n) {
  uint8_t scratch[64];
  const ByteLink& l = opt_->link;
  const int r = l.read(l.ctx, scratch, n < sizeof scratch ? n : sizeof scratch);
  if (r > 0) touch();
  return r;
}

void TlsLink::begin_frame(uint8_t* body, size_t n) {
  uint8_t* head = body - 4;
  head[0] = static_cast<uint8_t>(n >> 24);
  head[1] = static_cast<uint8_t>(n >> 16);
  head[2] = static_cast<uint8_t>(n >> 8);
  head[3] = static_cast<uint8_t>(n);
  wr_ = head;
  wr_left_ = 4 + n;
}

TlsLink::Io TlsLink::flush() {
  while (wr_left_ > 0) {
    const int rc = mbedtls_ssl_write(&ssl_, wr_, wr_left_);
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE || rc == MBEDTLS_ERR_SSL_WANT_READ) return Io::kPending;
    if (rc < 0) {
      log_tls("write failed", rc);
      wr_left_ = 0;
      return Io::kEnd;
    }
    wr_ += rc;
    wr_left_ -= static_cast<size_t>(rc);
  }
  return Io::kDone;
}

// Up to n plaintext bytes: kDone with got = n, kPending (got < n so far), kEnd with err.
TlsLink::Io TlsLink::read_some(uint8_t* dst, size_t n, size_t& got, int& err) {
  while (got < n) {
    const int rc = mbedtls_ssl_read(&ssl_, dst + got, n - got);
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) return Io::kPending;
    if (rc <= 0) {
      err = rc == 0 ? MBEDTLS_ERR_SSL_CONN_EOF : rc;
      return Io::kEnd;
    }
    got += static_cast<size_t>(rc);
  }
  return Io::kDone;
}

TlsLink::Frame TlsLink::read_frame(uint8_t* buf, size_t cap, size_t& len) {
  int err = 0;
  for (;;) {
    if (rd_stage_ == 0) {
      const Io io = read_some(rd_head_, 4, rd_pos_, err);
      if (io == Io::kPending) return Frame::kPending;
      if (io == Io::kEnd) return end_read(err);
      rd_len_ = ReadBe32(rd_head_);
      rd_pos_ = 0;
      if (rd_len_ != 0 && rd_len_ <= cap) {
        rd_stage_ = 1;
        continue;
      }
      ++stats_->rejected_frames;
      LogLine l;
      l.add("rejected frame: ").add(StatusCodeName(rd_len_ == 0 ? StatusCode::kInvalidArgument : StatusCode::kOutOfRange))
          .add(": frame of ").add_u(rd_len_).add(" bytes, limit ").add_u(cap);
      if (rd_len_ > task::kMaxFrameBytes) {  // no host sends it: the stream is not frames any more
        l.add("; starting a new session");
        log(l.c_str());
        rd_stage_ = 0;
        return Frame::kEnd;
      }
      l.add("; skipped");
      log(l.c_str());
      rd_stage_ = 2;  // resync: skip the body
    }
    if (rd_stage_ == 1) {
      const Io io = read_some(buf, rd_len_, rd_pos_, err);
      if (io == Io::kPending) return Frame::kPending;
      if (io == Io::kEnd) return end_read(err);
      rd_stage_ = 0;
      rd_pos_ = 0;
      len = rd_len_;
      return Frame::kOk;
    }
    while (rd_pos_ < rd_len_) {  // stage 2
      size_t got = 0;
      const size_t k = rd_len_ - rd_pos_ < cap ? rd_len_ - rd_pos_ : cap;
      const Io io = read_some(buf, k, got, err);
      rd_pos_ += got;
      if (io == Io::kPending) return Frame::kPending;
      if (io == Io::kEnd) return end_read(err);
    }
    rd_stage_ = 0;
    rd_pos_ = 0;
    return Frame::kSkipped;
  }
}

TlsLink::Frame TlsLink::end_read(int rc) {
  rd_stage_ = 0;
  rd_pos_ = 0;
  if (rc == MBEDTLS_ERR_SSL_INVALID_MAC || rc == MBEDTLS_ERR_SSL_INVALID_RECORD || rc == MBEDTLS_ERR_SSL_BAD_INPUT_DATA) {
    ++stats_->rejected_records;
    log_tls("rejected TLS record: DATA_LOSS", rc);
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

}  // namespace fedrt::fw
