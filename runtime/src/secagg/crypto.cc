// mbedTLS 3.6 back end of fedrt/secagg/crypto.h (HKDF, ChaCha20, ChaCha20-Poly1305);
// X25519 lives in x25519_sodium.cc (hosts, Linux devices) or x25519_ref10.cc (firmware).
#include "fedrt/secagg/crypto.h"

#include <cstring>

#include <mbedtls/chacha20.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

namespace fedrt::secagg {

void Wipe(void* p, size_t n) { mbedtls_platform_zeroize(p, n); }

Status HkdfSha256(const uint8_t* salt, size_t salt_len, const uint8_t* ikm, size_t ikm_len, const uint8_t* info,
                  size_t info_len, uint8_t* okm, size_t okm_len) {
  if (okm_len == 0 || okm_len > 255 * 32) return Status::InvalidArgument("hkdf: output length must be in [1, 8160]");
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  if (md == nullptr) return Status::Internal("hkdf: SHA-256 not available in mbedTLS");
  if (mbedtls_hkdf(md, salt, salt_len, ikm, ikm_len, info, info_len, okm, okm_len) != 0)
    return Status::Internal("hkdf: mbedtls_hkdf failed");
  return Status::Ok();
}

Status ChaCha20Xor(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], uint32_t counter,
                   const uint8_t* in, uint8_t* out, size_t len) {
  mbedtls_chacha20_context ctx;
  mbedtls_chacha20_init(&ctx);
  int rc = mbedtls_chacha20_setkey(&ctx, key);
  if (rc == 0) rc = mbedtls_chacha20_starts(&ctx, nonce, counter);
  if (rc == 0 && in == nullptr) {
    static const uint8_t kZero[64] = {0};
    for (size_t off = 0; off < len && rc == 0; off += 64) {
      const size_t n = len - off < 64 ? len - off : 64;
      rc = mbedtls_chacha20_update(&ctx, n, kZero, out + off);
    }
  } else if (rc == 0) {
    rc = mbedtls_chacha20_update(&ctx, len, in, out);
  }
  mbedtls_chacha20_free(&ctx);
  return rc == 0 ? Status::Ok() : Status::Internal("chacha20: mbedTLS failed");
}

Status AeadSeal(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], const uint8_t* aad, size_t aad_len,
                const uint8_t* pt, size_t len, uint8_t* ct, uint8_t tag[kTagBytes]) {
  mbedtls_chachapoly_context ctx;
  mbedtls_chachapoly_init(&ctx);
  int rc = mbedtls_chachapoly_setkey(&ctx, key);
  if (rc == 0) rc = mbedtls_chachapoly_encrypt_and_tag(&ctx, len, nonce, aad, aad_len, pt, ct, tag);
  mbedtls_chachapoly_free(&ctx);
  return rc == 0 ? Status::Ok() : Status::Internal("aead: ChaCha20-Poly1305 encryption failed");
}

Status AeadOpen(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], const uint8_t* aad, size_t aad_len,
                const uint8_t* ct, size_t len, const uint8_t tag[kTagBytes], uint8_t* pt) {
  mbedtls_chachapoly_context ctx;
  mbedtls_chachapoly_init(&ctx);
  int rc = mbedtls_chachapoly_setkey(&ctx, key);
  if (rc == 0) rc = mbedtls_chachapoly_auth_decrypt(&ctx, len, nonce, aad, aad_len, tag, ct, pt);
  mbedtls_chachapoly_free(&ctx);
  if (rc == MBEDTLS_ERR_CHACHAPOLY_AUTH_FAILED) {
    Wipe(pt, len);
    return {StatusCode::kUnauthenticated, "aead: authentication tag mismatch (forged or corrupted share)"};
  }
  return rc == 0 ? Status::Ok() : Status::Internal("aead: ChaCha20-Poly1305 decryption failed");
}

Status AddKeystreamWords(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], int sign, uint32_t* y,
                         size_t d) {
  mbedtls_chacha20_context ctx;
  mbedtls_chacha20_init(&ctx);
  int rc = mbedtls_chacha20_setkey(&ctx, key);
  if (rc == 0) rc = mbedtls_chacha20_starts(&ctx, nonce, 0);
  static const uint8_t kZero[64] = {0};
  uint8_t block[64];
  for (size_t off = 0; off < d && rc == 0; off += 16) {
    const size_t words = d - off < 16 ? d - off : 16;
    rc = mbedtls_chacha20_update(&ctx, 64, kZero, block);
    for (size_t i = 0; i < words; ++i) {
      const uint32_t w = static_cast<uint32_t>(block[4 * i]) | static_cast<uint32_t>(block[4 * i + 1]) << 8 |
                         static_cast<uint32_t>(block[4 * i + 2]) << 16 | static_cast<uint32_t>(block[4 * i + 3]) << 24;
      y[off + i] = sign >= 0 ? y[off + i] + w : y[off + i] - w;
    }
  }
  Wipe(block, sizeof block);
  mbedtls_chacha20_free(&ctx);
  return rc == 0 ? Status::Ok() : Status::Internal("chacha20: keystream failed");
}

}  // namespace fedrt::secagg
