#pragma once
// Cryptographic primitives of secure aggregation, thin wrappers over mbedTLS
// (3.6 on hosts, cmake/host_mbedtls.cmake, and on the firmware, which must enable
// MBEDTLS_HKDF_C + MBEDTLS_SHA256_C, MBEDTLS_CHACHA20_C, MBEDTLS_POLY1305_C,
// MBEDTLS_CHACHAPOLY_C) and X25519 over libsodium (the system's on hosts,
// x25519_sodium.cc; its ref10 ladder compiled in on the firmware,
// x25519_ref10.cc, which allocates nothing). Device style: fixed-size caller
// buffers, Status results, no exceptions.

#include <cstddef>
#include <cstdint>

#include "fedrt/core/status.h"

namespace fedrt::secagg {

constexpr size_t kKeyBytes = 32;    // X25519 scalars and u-coordinates, ChaCha20 keys, seeds
constexpr size_t kNonceBytes = 12;  // ChaCha20 / ChaCha20-Poly1305 nonce (RFC 8439)
constexpr size_t kTagBytes = 16;    // Poly1305 tag

// X25519(k, u) (RFC 7748 section 5): the u-coordinate of [clamp(k)] u on
// Curve25519; k and u little-endian, the top bit of u ignored. Fails on a
// low-order u (all-zero shared secret).
Status X25519(const uint8_t scalar[kKeyBytes], const uint8_t u[kKeyBytes], uint8_t out[kKeyBytes]);

// Public key X25519(k, 9) of a secret scalar k (32 random bytes).
Status X25519Public(const uint8_t secret[kKeyBytes], uint8_t pub[kKeyBytes]);

// HKDF-SHA256 (RFC 5869): OKM = Expand(Extract(salt, IKM), info, L), L <= 255 * 32.
Status HkdfSha256(const uint8_t* salt, size_t salt_len, const uint8_t* ikm, size_t ikm_len, const uint8_t* info,
                  size_t info_len, uint8_t* okm, size_t okm_len);

// ChaCha20 (RFC 8439 section 2.4): out = in XOR keystream(key, nonce, counter).
// in == nullptr gives the raw keystream. in and out may alias.
Status ChaCha20Xor(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], uint32_t counter,
                   const uint8_t* in, uint8_t* out, size_t len);

// AEAD_CHACHA20_POLY1305 (RFC 8439 section 2.8): ct = ChaCha20(key, nonce, 1) XOR pt,
// tag = Poly1305(aad || ct || lengths) under the one-time key from block 0.
Status AeadSeal(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], const uint8_t* aad, size_t aad_len,
                const uint8_t* pt, size_t len, uint8_t* ct, uint8_t tag[kTagBytes]);
// Inverse of AeadSeal; UNAUTHENTICATED (and pt zeroed) when the tag does not verify.
Status AeadOpen(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], const uint8_t* aad, size_t aad_len,
                const uint8_t* ct, size_t len, const uint8_t tag[kTagBytes], uint8_t* pt);

// Adds sign * PRG(key, nonce) to y[0..d) in Z_(2^32): the keystream of
// ChaCha20(key, nonce, counter 0) read as little-endian 32-bit words.
Status AddKeystreamWords(const uint8_t key[kKeyBytes], const uint8_t nonce[kNonceBytes], int sign, uint32_t* y,
                         size_t d);

// Overwrites a secret with zeros in a way the compiler does not elide.
void Wipe(void* p, size_t n);

}  // namespace fedrt::secagg
