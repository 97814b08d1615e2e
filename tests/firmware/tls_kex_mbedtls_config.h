/* mbedTLS for tests/firmware/tls_kex_bench.cc: the firmware's configuration
 * (runtime/fw/fw_mbedtls_config.h, TLS 1.3, psk_dhe_ke and psk_ke) plus a TLS
 * server, so that both ends run in the one image. */
#ifndef FEDRT_FW_TLS_KEX_MBEDTLS_CONFIG_H
#define FEDRT_FW_TLS_KEX_MBEDTLS_CONFIG_H

#include "fw_mbedtls_config.h"

#define MBEDTLS_SSL_SRV_C
#undef MBEDTLS_PSA_KEY_SLOT_COUNT
#define MBEDTLS_PSA_KEY_SLOT_COUNT 8 /* both ends' PSK and ephemeral keys */

#endif /* FEDRT_FW_TLS_KEX_MBEDTLS_CONFIG_H */
