// mbedTLS 2.28 back end of fedrt/secagg/crypto.h.
#include "fedrt/secagg/crypto.h"

#include <cstring>

#include <mbedtls/chacha20.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/ecp.h>
#include <mbedtls/hkdf.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

namespace fedrt::secagg {

void Wipe(void* p, size_t n) { mbedtls_platform_zeroize(p, n); }

Status X25519(const uint8_t scalar[kKeyBytes], const uint8_t u[kKeyBytes], uint8_t out[kKeyBytes]) {
  uint8_t k[kKeyBytes], ub[kKeyBytes];
  std::memcpy(k, scalar, kKeyBytes);
  k[0] &= 248;  // decodeScalar25519
  k[31] &= 127;
  k[31] |= 64;
  std::memcpy(ub, u, kKeyBytes);
  ub[31] &= 127;  // decodeUCoordinate: ignore the top bit
  mbedtls_ecp_group grp;
  mbedtls_ecp_point P, R;
  mbedtls_mpi m;
  mbedtls_ecp_group_init(&grp);
  mbedtls_ecp_point_init(&P);
  mbedtls_ecp_point_init(&R);
  mbedtls_mpi_init(&m);
  Status st = Status::Ok();
  int rc = mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_CURVE25519);
  if (rc == 0) rc = mbedtls_mpi_read_binary_le(&m, k, kKeyBytes);
  if (rc == 0) rc = mbedtls_mpi_read_binary_le(&P.X, ub, kKeyBytes);
  if (rc == 0) rc = mbedtls_mpi_lset(&P.Z, 1);
  if (rc != 0) {
    st = Status::Internal("x25519: mbedTLS setup failed");
  } else {
    // Non-canonical u >= p is reduced mod p as RFC 7748 requires.
    if (mbedtls_mpi_cmp_mpi(&P.X, &grp.P) >= 0) rc = mbedtls_mpi_sub_mpi(&P.X, &P.X, &grp.P);
    if (rc == 0) rc = mbedtls_ecp_mul(&grp, &R, &m, &P, nullptr, nullptr);
    if (rc == MBEDTLS_ERR_ECP_INVALID_KEY) st = Status::InvalidArgument("x25519: peer key is a low-order point");
    else if (rc != 0) st = Status::Internal("x25519: scalar multiplication failed");
    else if (mbedtls_mpi_write_binary_le(&R.X, out, kKeyBytes) != 0) st = Status::Internal("x25519: output failed");
  }
  if (st.ok()) {
    uint8_t acc = 0;
    for (size_t i = 0; i < kKeyBytes; ++i) acc |= out[i];
    if (acc == 0) st = Status::InvalidArgument("x25519: all-zero shared secret (low-order peer key)");
  }
  mbedtls_mpi_free(&m);
  mbedtls_ecp_point_free(&R);
  mbedtls_ecp_point_free(&P);
  mbedtls_ecp_group_free(&grp);
  Wipe(k, sizeof k);
  return st;
}

Status X25519Public(const uint8_t secret[kKeyBytes], uint8_t pub[kKeyBytes]) {
  uint8_t base[kKeyBytes] = {9};
  return X25519(secret, base, pub);
}

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
