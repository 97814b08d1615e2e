/* X25519 for mbedTLS 3.6's PSA crypto on the firmware: the entry points of
 * fedrt_psa_x25519_driver.h over libsodium's ref10 ladder. */
#include "fedrt_psa_x25519_driver.h"

#include <string.h>

#include <mbedtls/platform_util.h>

int fedrt_x25519_ref10(unsigned char* q, const unsigned char* n, const unsigned char* p);

enum { kX25519Bytes = 32 };

static int IsX25519(const psa_key_attributes_t* attributes) {
  const psa_key_type_t type = psa_get_key_type(attributes);
  return PSA_KEY_TYPE_IS_ECC(type) && PSA_KEY_TYPE_ECC_GET_FAMILY(type) == PSA_ECC_FAMILY_MONTGOMERY &&
         (psa_get_key_bits(attributes) == 255 || psa_get_key_bits(attributes) == 0);
}

psa_status_t fedrt_x25519_transparent_import_key(const psa_key_attributes_t* attributes, const uint8_t* data,
                                                 size_t data_length, uint8_t* key_buffer, size_t key_buffer_size,
                                                 size_t* key_buffer_length, size_t* bits) {
  if (!IsX25519(attributes)) return PSA_ERROR_NOT_SUPPORTED;
  if (data_length != kX25519Bytes) return PSA_ERROR_INVALID_ARGUMENT;
  if (key_buffer_size < kX25519Bytes) return PSA_ERROR_BUFFER_TOO_SMALL;
  memcpy(key_buffer, data, kX25519Bytes);
  *key_buffer_length = kX25519Bytes;
  *bits = 255;
  return PSA_SUCCESS;
}

psa_status_t fedrt_x25519_transparent_export_public_key(const psa_key_attributes_t* attributes,
                                                        const uint8_t* key_buffer, size_t key_buffer_size,
                                                        uint8_t* data, size_t data_size, size_t* data_length) {
  static const unsigned char kBase[kX25519Bytes] = {9};
  if (!IsX25519(attributes)) return PSA_ERROR_NOT_SUPPORTED;
  if (key_buffer_size != kX25519Bytes) return PSA_ERROR_INVALID_ARGUMENT;
  if (data_size < kX25519Bytes) return PSA_ERROR_BUFFER_TOO_SMALL;
  if (PSA_KEY_TYPE_IS_PUBLIC_KEY(psa_get_key_type(attributes)))
    memcpy(data, key_buffer, kX25519Bytes);
  else if (fedrt_x25519_ref10(data, key_buffer, kBase) != 0)
    return PSA_ERROR_CORRUPTION_DETECTED;
  *data_length = kX25519Bytes;
  return PSA_SUCCESS;
}

psa_status_t fedrt_x25519_transparent_generate_key(const psa_key_attributes_t* attributes, uint8_t* key_buffer,
                                                   size_t key_buffer_size, size_t* key_buffer_length) {
  if (!IsX25519(attributes) || !PSA_KEY_TYPE_IS_KEY_PAIR(psa_get_key_type(attributes)))
    return PSA_ERROR_NOT_SUPPORTED;
  if (key_buffer_size < kX25519Bytes) return PSA_ERROR_BUFFER_TOO_SMALL;
  const psa_status_t st = psa_generate_random(key_buffer, kX25519Bytes);
  if (st != PSA_SUCCESS) return st;
  key_buffer[0] &= 248;
  key_buffer[31] &= 127;
  key_buffer[31] |= 64;
  *key_buffer_length = kX25519Bytes;
  return PSA_SUCCESS;
}

psa_status_t fedrt_x25519_transparent_key_agreement(const psa_key_attributes_t* attributes, const uint8_t* key_buffer,
                                                    size_t key_buffer_size, psa_algorithm_t alg,
                                                    const uint8_t* peer_key, size_t peer_key_length,
                                                    uint8_t* shared_secret, size_t shared_secret_size,
                                                    size_t* shared_secret_length) {
  if (!IsX25519(attributes) || !PSA_ALG_IS_ECDH(alg)) return PSA_ERROR_NOT_SUPPORTED;
  if (key_buffer_size != kX25519Bytes || peer_key_length != kX25519Bytes) return PSA_ERROR_INVALID_ARGUMENT;
  if (shared_secret_size < kX25519Bytes) return PSA_ERROR_BUFFER_TOO_SMALL;
  unsigned char out[kX25519Bytes];
  if (fedrt_x25519_ref10(out, key_buffer, peer_key) != 0) {  /* low-order peer key: an all-zero secret */
    mbedtls_platform_zeroize(out, sizeof out);
    return PSA_ERROR_INVALID_ARGUMENT;
  }
  memcpy(shared_secret, out, kX25519Bytes);
  mbedtls_platform_zeroize(out, sizeof out);
  *shared_secret_length = kX25519Bytes;
  return PSA_SUCCESS;
}
