/* X25519 for mbedTLS 3.6's PSA crypto on the firmware: the driver entry point
 * of fedrt_psa_x25519_driver.h and mbedtls_ecdh_compute_shared
 * (MBEDTLS_ECDH_COMPUTE_SHARED_ALT), both over libsodium's ref10 ladder. */
#define MBEDTLS_ALLOW_PRIVATE_ACCESS /* the group's id, the point's X */
#include "fedrt_psa_x25519_driver.h"

#include <mbedtls/ecdh.h>
#include <mbedtls/platform_util.h>

int fedrt_x25519_ref10(unsigned char* q, const unsigned char* n, const unsigned char* p);

psa_status_t fedrt_x25519_transparent_export_public_key(const psa_key_attributes_t* attributes,
                                                        const uint8_t* key_buffer, size_t key_buffer_size,
                                                        uint8_t* data, size_t data_size, size_t* data_length) {
  static const unsigned char kBase[32] = {9};
  if (psa_get_key_type(attributes) != PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_MONTGOMERY) ||
      psa_get_key_bits(attributes) != 255)
    return PSA_ERROR_NOT_SUPPORTED;
  if (key_buffer_size != 32) return PSA_ERROR_INVALID_ARGUMENT;
  if (data_size < 32) return PSA_ERROR_BUFFER_TOO_SMALL;
  if (fedrt_x25519_ref10(data, key_buffer, kBase) != 0) return PSA_ERROR_CORRUPTION_DETECTED;
  *data_length = 32;
  return PSA_SUCCESS;
}

int mbedtls_ecdh_compute_shared(mbedtls_ecp_group* grp, mbedtls_mpi* z, const mbedtls_ecp_point* Q,
                                const mbedtls_mpi* d, int (*f_rng)(void*, unsigned char*, size_t), void* p_rng) {
  unsigned char k[32], u[32], out[32];
  unsigned char acc = 0;
  int ret;
  (void)f_rng;
  (void)p_rng;
  if (grp->id != MBEDTLS_ECP_DP_CURVE25519) return MBEDTLS_ERR_ECP_FEATURE_UNAVAILABLE;
  ret = mbedtls_mpi_write_binary_le(d, k, sizeof k);
  if (ret == 0) ret = mbedtls_mpi_write_binary_le(&Q->X, u, sizeof u);
  if (ret == 0 && fedrt_x25519_ref10(out, k, u) != 0) ret = MBEDTLS_ERR_ECP_INVALID_KEY; /* low-order peer key */
  if (ret == 0) {
    for (size_t i = 0; i < sizeof out; ++i) acc |= out[i];
    if (acc == 0) ret = MBEDTLS_ERR_ECP_BAD_INPUT_DATA; /* all-zero secret, as mbedTLS's own */
  }
  if (ret == 0) ret = mbedtls_mpi_read_binary_le(z, out, sizeof out);
  mbedtls_platform_zeroize(k, sizeof k);
  mbedtls_platform_zeroize(out, sizeof out);
  return ret;
}
