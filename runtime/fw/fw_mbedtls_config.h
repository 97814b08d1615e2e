/* mbedTLS 3.6 configuration of the fedrt firmware (every image) and of its
 * host build fedrt-fw-host (the same library built from Debian's mbedtls 3.6
 * LTS source package, see scripts/fetch_sources.sh and
 * cmake/fw_mbedtls.cmake).
 *
 * What it is: a TLS 1.3 client whose key exchange is psk_dhe_ke (the
 * provisioned PSK plus an ephemeral X25519 exchange: forward secrecy), or
 * psk_ke when the coordinator allows only that, one suite,
 * TLS_CHACHA20_POLY1305_SHA256, no certificates. TLS 1.3 runs on PSA
 * crypto (runtime/fw/fw_psa_config.h), whose random generator is the link's
 * HMAC_DRBG (MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG, runtime/src/fw/tls_link.cc),
 * and X25519 is a PSA driver over libsodium's ref10 ladder (runtime/fw/psa_driver).
 * Memory: mbedTLS and PSA allocate only from a static buffer handed to
 * mbedtls_memory_buffer_alloc_init() (MEMORY_BUFFER_ALLOC_C); before that,
 * every allocation fails (PLATFORM_NO_STD_FUNCTIONS: calloc/free are never
 * referenced). TLS 1.3 has no max_fragment_length: incoming records are up to
 * the coordinator's 2048 bytes of plaintext (runtime/tls/mbedtls_host_config.h),
 * outgoing ones at most 1 KB.
 * Randomness: no entropy source on the boards (NO_PLATFORM_ENTROPY); an
 * HMAC_DRBG (SHA-256) is seeded from the per-device provisioned seed.
 * Cost: 3.2 M Cortex-M4F instructions per handshake
 * (tests/firmware/tls_kex_bench.cc, docs/microcontrollers.md).
 */
#ifndef FEDRT_FW_MBEDTLS_CONFIG_H
#define FEDRT_FW_MBEDTLS_CONFIG_H

/* System support */
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
#define MBEDTLS_PLATFORM_NO_STD_FUNCTIONS
#define MBEDTLS_MEMORY_BUFFER_ALLOC_C
#define MBEDTLS_MEMORY_ALIGN_MULTIPLE 8 /* blocks hold 64-bit fields (the default 4 misaligns them on 64-bit hosts) */
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_DEPRECATED_REMOVED
/* Statistics for the TLS heap high-water mark (mbedtls_memory_buffer_alloc_max_get);
 * its diagnostics print nothing, and a corrupted heap traps instead of calling exit(). */
#define MBEDTLS_MEMORY_DEBUG
#define MBEDTLS_PLATFORM_FPRINTF_MACRO(...) ((void)0)
#define MBEDTLS_PLATFORM_EXIT_MACRO(code) __builtin_trap()

/* Crypto: ChaCha20-Poly1305 AEAD, SHA-256, HMAC_DRBG, HKDF (TLS and SecAgg+,
 * whose X25519 is libsodium's ref10: runtime/src/secagg/x25519_ref10.cc) */
#define MBEDTLS_CIPHER_C
#define MBEDTLS_CHACHA20_C
#define MBEDTLS_POLY1305_C
#define MBEDTLS_CHACHAPOLY_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA256_SMALLER
#define MBEDTLS_HMAC_DRBG_C
#define MBEDTLS_HKDF_C

/* PSA crypto: a few volatile key slots, randomness from the caller. */
#define MBEDTLS_PSA_CRYPTO_C
#define MBEDTLS_PSA_CRYPTO_CONFIG
#define MBEDTLS_PSA_CRYPTO_CONFIG_FILE "fw_psa_config.h"
#define MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG
#define MBEDTLS_PSA_KEY_SLOT_COUNT 4
/* X25519 entirely in the PSA driver of runtime/fw/psa_driver (libsodium's
 * ref10 ladder, cmake/fw_mbedtls.cmake): key generation, import,
 * public key and ECDH. With every ECC key type, curve and algorithm
 * accelerated, mbedTLS builds no bignum, ECP or ECDH code (a "driver-only"
 * ECC build) and its X25519 costs 1.2 M Cortex-M4F instructions instead of
 * the generic code's 12.8 M. */
#define MBEDTLS_PSA_CRYPTO_DRIVERS
#define FEDRT_PSA_X25519_DRIVER_ENABLED
#define PSA_CRYPTO_DRIVER_PRESENT             /* the generated dispatch calls */
#define PSA_CRYPTO_ACCELERATOR_DRIVER_PRESENT /* transparent drivers only then */
#define MBEDTLS_PSA_ACCEL_ECC_MONTGOMERY_255
#define MBEDTLS_PSA_ACCEL_ALG_ECDH
#define MBEDTLS_PSA_ACCEL_KEY_TYPE_ECC_PUBLIC_KEY
#define MBEDTLS_PSA_ACCEL_KEY_TYPE_ECC_KEY_PAIR_BASIC
#define MBEDTLS_PSA_ACCEL_KEY_TYPE_ECC_KEY_PAIR_IMPORT
#define MBEDTLS_PSA_ACCEL_KEY_TYPE_ECC_KEY_PAIR_EXPORT
#define MBEDTLS_PSA_ACCEL_KEY_TYPE_ECC_KEY_PAIR_GENERATE

/* TLS 1.3 client, PSK with ephemeral X25519 (psk_dhe_ke), and PSK alone
 * (psk_ke) for a coordinator that allows only that
 * (network.psk_forward_secrecy = false), as the Linux devices offer. */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_3
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE /* required by TLS 1.3; no certificate is ever received */
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_ENABLED
#define MBEDTLS_SSL_CIPHERSUITES MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256

/* Record buffers: 2 KB in (the coordinator's largest record), 1 KB out. */
#define MBEDTLS_SSL_IN_CONTENT_LEN 2048
#define MBEDTLS_SSL_OUT_CONTENT_LEN 1024
#define MBEDTLS_PSK_MAX_LEN 64
#define MBEDTLS_SSL_DTLS_MAX_BUFFERING 0

#endif /* FEDRT_FW_MBEDTLS_CONFIG_H */
