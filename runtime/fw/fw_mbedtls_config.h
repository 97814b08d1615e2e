/* mbedTLS 3.6 configuration of the fedrt firmware (fedrt-fw) and of its host
 * build (the same library built from Debian's mbedtls 3.6 LTS source
 * package, see scripts/fetch_sources.sh and cmake/firmware_app.cmake).
 *
 * What it is: a TLS 1.2 client with one cipher suite,
 * TLS-PSK-WITH-CHACHA20-POLY1305-SHA256 (the coordinator accepts it when
 * [network] tls_min_version = "1.2"), no certificates, no PSA crypto; the
 * TLS 1.3 variant is runtime/fw/fw_mbedtls_tls13_config.h.
 * Memory: mbedTLS and PSA allocate only from a static buffer handed to
 * mbedtls_memory_buffer_alloc_init() (MEMORY_BUFFER_ALLOC_C); before that,
 * every allocation fails (PLATFORM_NO_STD_FUNCTIONS: calloc/free are never
 * referenced). Records are at most 1 KB of plaintext each way: the client asks
 * for max_fragment_length = 1024 so the coordinator never sends a larger one.
 * Randomness: no entropy source on the boards (NO_PLATFORM_ENTROPY); an
 * HMAC_DRBG (SHA-256) is seeded from the per-device provisioned seed.
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

/* TLS 1.2 client, PSK only: the images of the 96 KB / 128 KB parts (fedrt-fw,
 * fedrt-fw-lsa, fedrt-fw-own), which TLS 1.3 with PSA crypto does not fit
 * (runtime/fw/fw_mbedtls_tls13_config.h): a coordinator serving them keeps
 * [network] tls_min_version = "1.2". */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_KEY_EXCHANGE_PSK_ENABLED
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#define MBEDTLS_SSL_MAX_FRAGMENT_LENGTH
#define MBEDTLS_SSL_CIPHERSUITES MBEDTLS_TLS_PSK_WITH_CHACHA20_POLY1305_SHA256

/* Small record buffers: 1 KB plaintext each way (max_fragment_length 1024). */
#define MBEDTLS_SSL_IN_CONTENT_LEN 1024
#define MBEDTLS_SSL_OUT_CONTENT_LEN 1024
#define MBEDTLS_SSL_MAX_CONTENT_LEN 1024
#define MBEDTLS_PSK_MAX_LEN 64
#define MBEDTLS_SSL_DTLS_MAX_BUFFERING 0

#endif /* FEDRT_FW_MBEDTLS_CONFIG_H */
