// fedrt-fw-tls-kex-bench: what forward secrecy costs a microcontroller
// (docs/tls.md). One image runs both ends of a TLS 1.3
// handshake in memory, the firmware's client configuration (PSK identity,
// TLS_CHACHA20_POLY1305_SHA256, HMAC_DRBG, PSA crypto) against a server,
// once with psk_ke (PSK alone) and once with psk_dhe_ke (PSK + X25519: the
// firmware's mode, forward secrecy). Under qemu-run.sh --icount it prints
// the instructions the client spends in its handshake and the TLS heap's
// high-water mark for each, after checking that application data crosses
// the session both ways.

#include <mbedtls/hmac_drbg.h>
#include <mbedtls/memory_buffer_alloc.h>
#include <mbedtls/ssl.h>
#include <psa/crypto.h>

#include <cstring>

#include "mps2.h"

namespace {

constexpr uint32_t kInstructionsPerTick = 40;  // -icount shift=0 at 25 MHz
// The client's psk_dhe_ke handshake budget (issue 45: forward secrecy on the
// microcontroller at most 5 M instructions; docs/tls.md).
constexpr uint64_t kDheBudget = 5000000;

alignas(8) unsigned char g_heap[16384];
mbedtls_hmac_drbg_context g_psa_drbg;  // PSA crypto's generator (both ends)

// One direction of the in-memory link.
struct Pipe {
  unsigned char buf[2048];
  size_t len = 0;
};
struct End {
  Pipe* in;
  Pipe* out;
};

int Send(void* ctx, const unsigned char* b, size_t n) {
  Pipe* p = static_cast<End*>(ctx)->out;
  if (p->len == sizeof p->buf) return MBEDTLS_ERR_SSL_WANT_WRITE;
  if (n > sizeof p->buf - p->len) n = sizeof p->buf - p->len;
  std::memcpy(p->buf + p->len, b, n);
  p->len += n;
  return static_cast<int>(n);
}

int Recv(void* ctx, unsigned char* b, size_t n) {
  Pipe* p = static_cast<End*>(ctx)->in;
  if (p->len == 0) return MBEDTLS_ERR_SSL_WANT_READ;
  if (n > p->len) n = p->len;
  std::memcpy(b, p->buf, n);
  std::memmove(p->buf, p->buf + n, p->len - n);
  p->len -= n;
  return static_cast<int>(n);
}

const unsigned char kPsk[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
const unsigned char kIdentity[] = "dev0000";

struct Result {
  int rc = 0;
  uint64_t client_ticks = 0, server_ticks = 0;
  size_t heap_hwm = 0;
  const char* suite = "";
};

// A full handshake with the client offering only key exchange `mode`; the server accepts both.
Result Handshake(int mode) {
  Result r;
  mbedtls_hmac_drbg_context drbg_c, drbg_s;
  mbedtls_ssl_config conf_c, conf_s;
  mbedtls_ssl_context cli, srv;
  mbedtls_hmac_drbg_init(&drbg_c);
  mbedtls_hmac_drbg_init(&drbg_s);
  mbedtls_ssl_config_init(&conf_c);
  mbedtls_ssl_config_init(&conf_s);
  mbedtls_ssl_init(&cli);
  mbedtls_ssl_init(&srv);
  static Pipe up, down;
  up.len = down.len = 0;
  End client_end{&down, &up}, server_end{&up, &down};
  const mbedtls_md_info_t* sha = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  const unsigned char seed_c[] = "tls-kex-bench client", seed_s[] = "tls-kex-bench server";
  int rc = mbedtls_hmac_drbg_seed_buf(&drbg_c, sha, seed_c, sizeof seed_c);
  if (rc == 0) rc = mbedtls_hmac_drbg_seed_buf(&drbg_s, sha, seed_s, sizeof seed_s);
  if (rc == 0) rc = mbedtls_ssl_config_defaults(&conf_c, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                                MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc == 0) rc = mbedtls_ssl_config_defaults(&conf_s, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                                MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc == 0) {
    mbedtls_ssl_conf_rng(&conf_c, mbedtls_hmac_drbg_random, &drbg_c);
    mbedtls_ssl_conf_rng(&conf_s, mbedtls_hmac_drbg_random, &drbg_s);
    static const uint16_t kGroups[] = {MBEDTLS_SSL_IANA_TLS_GROUP_X25519, MBEDTLS_SSL_IANA_TLS_GROUP_NONE};
    mbedtls_ssl_conf_groups(&conf_c, kGroups);
    mbedtls_ssl_conf_groups(&conf_s, kGroups);
    mbedtls_ssl_conf_tls13_key_exchange_modes(&conf_c, mode);
    mbedtls_ssl_conf_tls13_key_exchange_modes(&conf_s, MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_ALL);
  }
  if (rc == 0) rc = mbedtls_ssl_conf_psk(&conf_c, kPsk, sizeof kPsk, kIdentity, sizeof kIdentity - 1);
  if (rc == 0) rc = mbedtls_ssl_conf_psk(&conf_s, kPsk, sizeof kPsk, kIdentity, sizeof kIdentity - 1);
  if (rc == 0) rc = mbedtls_ssl_setup(&cli, &conf_c);
  if (rc == 0) rc = mbedtls_ssl_setup(&srv, &conf_s);
  if (rc == 0) {
    mbedtls_ssl_set_bio(&cli, &client_end, Send, Recv, nullptr);
    mbedtls_ssl_set_bio(&srv, &server_end, Send, Recv, nullptr);
  }
  // Alternate the two ends until both finish; only the client's calls are timed.
  int rc_c = MBEDTLS_ERR_SSL_WANT_READ, rc_s = MBEDTLS_ERR_SSL_WANT_READ;
  for (int turn = 0; rc == 0 && turn < 64 && (rc_c != 0 || rc_s != 0); ++turn) {
    if (rc_c != 0) {
      const uint64_t t0 = mps2_ticks();
      rc_c = mbedtls_ssl_handshake(&cli);
      r.client_ticks += mps2_ticks() - t0;
      if (rc_c != 0 && rc_c != MBEDTLS_ERR_SSL_WANT_READ && rc_c != MBEDTLS_ERR_SSL_WANT_WRITE) rc = rc_c;
    }
    if (rc == 0 && rc_s != 0) {
      const uint64_t t0 = mps2_ticks();
      rc_s = mbedtls_ssl_handshake(&srv);
      r.server_ticks += mps2_ticks() - t0;
      if (rc_s != 0 && rc_s != MBEDTLS_ERR_SSL_WANT_READ && rc_s != MBEDTLS_ERR_SSL_WANT_WRITE) rc = rc_s;
    }
  }
  if (rc == 0 && (rc_c != 0 || rc_s != 0)) rc = -1;  // no progress
  if (rc == 0) {
    r.suite = mbedtls_ssl_get_ciphersuite(&cli);
    // Application data both ways.
    unsigned char got[16] = {};
    if (mbedtls_ssl_write(&cli, reinterpret_cast<const unsigned char*>("ping"), 4) != 4 ||
        mbedtls_ssl_read(&srv, got, sizeof got) != 4 || std::memcmp(got, "ping", 4) != 0 ||
        mbedtls_ssl_write(&srv, reinterpret_cast<const unsigned char*>("pong"), 4) != 4 ||
        mbedtls_ssl_read(&cli, got, sizeof got) != 4 || std::memcmp(got, "pong", 4) != 0)
      rc = -2;
  }
  size_t blocks = 0;
  mbedtls_memory_buffer_alloc_max_get(&r.heap_hwm, &blocks);
  mbedtls_ssl_free(&cli);
  mbedtls_ssl_free(&srv);
  mbedtls_ssl_config_free(&conf_c);
  mbedtls_ssl_config_free(&conf_s);
  mbedtls_hmac_drbg_free(&drbg_c);
  mbedtls_hmac_drbg_free(&drbg_s);
  r.rc = rc;
  return r;
}

}  // namespace

extern "C" psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t*, uint8_t* out,
                                                        size_t n, size_t* got) {
  *got = 0;
  if (mbedtls_hmac_drbg_random(&g_psa_drbg, out, n) != 0) return PSA_ERROR_HARDWARE_FAILURE;
  *got = n;
  return PSA_SUCCESS;
}

int main() {
  mbedtls_memory_buffer_alloc_init(g_heap, sizeof g_heap);
  mbedtls_hmac_drbg_init(&g_psa_drbg);
  const unsigned char seed[] = "tls-kex-bench psa";
  if (mbedtls_hmac_drbg_seed_buf(&g_psa_drbg, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), seed, sizeof seed) != 0 ||
      psa_crypto_init() != PSA_SUCCESS) {
    mps2_puts("tls-kex-bench: FAIL (PSA crypto)\n");
    return 1;
  }
  struct Mode {
    int mode;
    const char* name;
    const char* report;  // the footprint table's key (scripts/footprint.py)
    uint64_t budget;     // client instructions, 0: none
  };
  const Mode modes[] = {
      {MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK, "psk_ke", "tls13_psk_ke_client_instructions", 0},
      {MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL, "psk_dhe_ke_x25519", "tls13_psk_dhe_ke_client_instructions",
       kDheBudget}};
  int failures = 0;
  for (const Mode& m : modes) {
    mbedtls_memory_buffer_alloc_max_reset();
    const Result r = Handshake(m.mode);
    mps2_puts("fedrt-fw-tls-kex-bench: mode=");
    mps2_puts(m.name);
    mps2_puts(" suite=");
    mps2_puts(r.suite);
    if (r.rc != 0) {
      mps2_puts(" failed rc=-0x");
      mps2_put_hex32(static_cast<uint32_t>(-r.rc));
      mps2_puts("\n");
    mps2_report_u32(m.report, static_cast<uint32_t>(r.client_ticks * kInstructionsPerTick));
      ++failures;
      continue;
    }
    mps2_puts(" client_instructions=");
    mps2_put_u64(r.client_ticks * kInstructionsPerTick);
    mps2_puts(" server_instructions=");
    mps2_put_u64(r.server_ticks * kInstructionsPerTick);
    mps2_puts(" heap_hwm_both_ends=");
    mps2_put_u32(static_cast<uint32_t>(r.heap_hwm));
    mps2_puts(" data=ok");
    if (m.budget != 0 && r.client_ticks * kInstructionsPerTick > m.budget) {
      mps2_puts(" over_budget=");
      mps2_put_u64(m.budget);
      ++failures;
    }
    mps2_puts("\n");
    mps2_report_u32(m.report, static_cast<uint32_t>(r.client_ticks * kInstructionsPerTick));
  }
  mps2_puts(failures == 0 ? "tls-kex-bench: PASS\n" : "tls-kex-bench: FAIL\n");
  return failures == 0 ? 0 : 1;
}
