/* mbedTLS 3.6 configuration of the fedrt firmware with TLS 1.3: the base
 * configuration (runtime/fw/fw_mbedtls_config.h: platform, static heap,
 * ChaCha20-Poly1305, SHA-256, HMAC_DRBG, HKDF) with its
 * TLS 1.2 client replaced by a TLS 1.3 one: one key exchange mode,
 * psk_dhe_ke (the provisioned PSK plus an ephemeral X25519 exchange: forward
 * secrecy), one suite, TLS_CHACHA20_POLY1305_SHA256, no certificates.
 * TLS 1.3 runs on PSA crypto (runtime/fw/fw_psa_config.h), whose random
 * generator is the link's HMAC_DRBG (MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG,
 * runtime/src/fw/tls_link.cc). TLS 1.3 has no max_fragment_length: incoming
 * records are up to the coordinator's 2048 bytes of plaintext
 * (runtime/tls/mbedtls_host_config.h), outgoing ones at most 1 KB.
 * Cost: about 15.5 KB more flash than the TLS 1.2 client (fedrt-fw on the
 * Cortex-M4F), and 27 M instructions per handshake with the generic X25519
 * (tests/firmware/tls_kex_bench.cc). */
#ifndef FEDRT_FW_MBEDTLS_TLS13_CONFIG_H
#define FEDRT_FW_MBEDTLS_TLS13_CONFIG_H

#include "fw_mbedtls_config.h"

#undef MBEDTLS_SSL_PROTO_TLS1_2
#undef MBEDTLS_KEY_EXCHANGE_PSK_ENABLED
#undef MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#undef MBEDTLS_SSL_MAX_FRAGMENT_LENGTH
#undef MBEDTLS_SSL_CIPHERSUITES
#undef MBEDTLS_SSL_IN_CONTENT_LEN
#undef MBEDTLS_SSL_MAX_CONTENT_LEN

/* PSA crypto: a few volatile key slots, randomness from the caller. */
#define MBEDTLS_PSA_CRYPTO_C
#define MBEDTLS_PSA_CRYPTO_CONFIG
#define MBEDTLS_PSA_CRYPTO_CONFIG_FILE "fw_psa_config.h"
#define MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG
#define MBEDTLS_PSA_KEY_SLOT_COUNT 4
/* X25519 public keys and shared secrets over libsodium's ref10 ladder
 * (runtime/fw/psa_driver, cmake/fw_mbedtls_tls13.cmake), not the generic
 * bignum code: 1.2 M instead of 12.8 M Cortex-M4F instructions each. */
#define MBEDTLS_PSA_CRYPTO_DRIVERS
#define FEDRT_PSA_X25519_DRIVER_ENABLED
#define PSA_CRYPTO_DRIVER_PRESENT             /* the generated dispatch calls */
#define PSA_CRYPTO_ACCELERATOR_DRIVER_PRESENT /* transparent drivers only then */
#define MBEDTLS_ECDH_COMPUTE_SHARED_ALT
/* X25519 for PSA's ECDH: mbedTLS's generic ECP code, Curve25519 only, small
 * windows, no fixed-point tables. */
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED
#define MBEDTLS_ECP_WINDOW_SIZE 2
#define MBEDTLS_ECP_FIXED_POINT_OPTIM 0
#define MBEDTLS_MPI_MAX_SIZE 64
#define MBEDTLS_MPI_WINDOW_SIZE 1

/* TLS 1.3 client, PSK with ephemeral X25519 only */
#define MBEDTLS_SSL_PROTO_TLS1_3
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE /* required by TLS 1.3; no certificate is ever received */
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED
#define MBEDTLS_SSL_CIPHERSUITES MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256
#define MBEDTLS_SSL_IN_CONTENT_LEN 2048 /* the coordinator's largest record */

#endif /* FEDRT_FW_MBEDTLS_TLS13_CONFIG_H */
