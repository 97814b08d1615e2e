/* A PSA transparent driver for X25519 (RFC 7748) over libsodium's ref10
 * ladder (runtime/src/secagg/x25519_ref10_ladder.c): with it, the firmware's
 * mbedTLS is a "driver-only" ECC build (runtime/fw/fw_mbedtls_config.h)
 * with no bignum, ECP or ECDH module. import_key and export_public_key are
 * dispatched from runtime/fw/psa_driver/fedrt_x25519_driver.json; generate_key
 * and key_agreement, which mbedTLS 3.6's generator does not take from a
 * description, are added to the generated dispatch by
 * cmake/fw_mbedtls.cmake. Keys: Montgomery curve 25519, 255 bits,
 * 32-byte little-endian strings (private scalar k, public u). */
#ifndef FEDRT_PSA_X25519_DRIVER_H
#define FEDRT_PSA_X25519_DRIVER_H

#include <psa/crypto.h>

/* Takes a 32-byte private key or public key as is (a key pair's public half is
 * computed on export). */
psa_status_t fedrt_x25519_transparent_import_key(const psa_key_attributes_t* attributes, const uint8_t* data,
                                                 size_t data_length, uint8_t* key_buffer, size_t key_buffer_size,
                                                 size_t* key_buffer_length, size_t* bits);

/* The public key u = X25519(k, 9) of the private key k in key_buffer, or a
 * public key's own 32 bytes. */
psa_status_t fedrt_x25519_transparent_export_public_key(const psa_key_attributes_t* attributes,
                                                        const uint8_t* key_buffer, size_t key_buffer_size,
                                                        uint8_t* data, size_t data_size, size_t* data_length);

/* A fresh private key: 32 bytes of psa_generate_random, clamped (RFC 7748,
 * decodeScalar25519: k[0] &= 248, k[31] &= 127, k[31] |= 64). */
psa_status_t fedrt_x25519_transparent_generate_key(const psa_key_attributes_t* attributes, uint8_t* key_buffer,
                                                   size_t key_buffer_size, size_t* key_buffer_length);

/* ECDH: the shared secret X25519(k, u_peer); refused when it is all zero
 * (a low-order peer key). */
psa_status_t fedrt_x25519_transparent_key_agreement(const psa_key_attributes_t* attributes, const uint8_t* key_buffer,
                                                    size_t key_buffer_size, psa_algorithm_t alg,
                                                    const uint8_t* peer_key, size_t peer_key_length,
                                                    uint8_t* shared_secret, size_t shared_secret_size,
                                                    size_t* shared_secret_length);

#endif /* FEDRT_PSA_X25519_DRIVER_H */
