/* mbedTLS for tests/firmware/tls_kex_bench.cc: the firmware's configuration
 * (runtime/fw/mbedtls_config.h) plus what an ECDHE-PSK handshake needs on
 * the device (ECDH over the X25519 the image already has for SecAgg+), and
 * a TLS server so that both ends run in the one image. */
#ifndef FEDRT_FW_TLS_KEX_MBEDTLS_CONFIG_H
#define FEDRT_FW_TLS_KEX_MBEDTLS_CONFIG_H

#include "mbedtls_config.h"

#undef MBEDTLS_SSL_CIPHERSUITES
#define MBEDTLS_SSL_CIPHERSUITES \
  MBEDTLS_TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256, MBEDTLS_TLS_PSK_WITH_CHACHA20_POLY1305_SHA256
#define MBEDTLS_ECDH_C
#define MBEDTLS_KEY_EXCHANGE_ECDHE_PSK_ENABLED
#define MBEDTLS_SSL_SRV_C

#endif /* FEDRT_FW_TLS_KEX_MBEDTLS_CONFIG_H */
