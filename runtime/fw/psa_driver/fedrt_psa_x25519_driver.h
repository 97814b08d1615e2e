/* A PSA transparent driver (runtime/fw/psa_driver/fedrt_x25519_driver.json)
 * whose one entry point exports an X25519 key pair's public key with
 * libsodium's ref10 ladder (runtime/src/secagg/x25519_ref10_ladder.c), so
 * that TLS 1.3's key share does not go through mbedTLS's generic bignum
 * code. The shared secret takes the same ladder through
 * MBEDTLS_ECDH_COMPUTE_SHARED_ALT (runtime/fw/psa_driver/fedrt_psa_x25519_driver.c);
 * key generation in mbedTLS 3.6 draws only the private scalar. */
#ifndef FEDRT_PSA_X25519_DRIVER_H
#define FEDRT_PSA_X25519_DRIVER_H

#include <psa/crypto.h>

/* The public key X25519(k, 9) of the 32-byte private key in key_buffer. */
psa_status_t fedrt_x25519_transparent_export_public_key(const psa_key_attributes_t* attributes,
                                                        const uint8_t* key_buffer, size_t key_buffer_size,
                                                        uint8_t* data, size_t data_size, size_t* data_length);

#endif /* FEDRT_PSA_X25519_DRIVER_H */
