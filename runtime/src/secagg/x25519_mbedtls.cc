// X25519 of fedrt/secagg/crypto.h over mbedTLS 2.28's generic elliptic-curve
// code: small, and the only choice on a microcontroller (about 12 million
// Cortex-M4F instructions per scalar multiplication). Hosts and Linux devices
// use x25519_sodium.cc, 25 times faster on x86-64.
#include "fedrt/secagg/crypto.h"

#include <cstring>

#include <mbedtls/ecp.h>

namespace fedrt::secagg {

Status X25519(const uint8_t scalar[kKeyBytes], const uint8_t u[kKeyBytes], uint8_t out[kKeyBytes]) {
  uint8_t k[kKeyBytes], ub[kKeyBytes];
  std::memcpy(k, scalar, kKeyBytes);
  k[0] &= 248;  // decodeScalar25519
  k[31] &= 127;
  k[31] |= 64;
  std::memcpy(ub, u, kKeyBytes);
  ub[31] &= 127;  // decodeUCoordinate: ignore the top bit
  mbedtls_ecp_group grp;
  mbedtls_ecp_point P, R;
  mbedtls_mpi m;
  mbedtls_ecp_group_init(&grp);
  mbedtls_ecp_point_init(&P);
  mbedtls_ecp_point_init(&R);
  mbedtls_mpi_init(&m);
  Status st = Status::Ok();
  int rc = mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_CURVE25519);
  if (rc == 0) rc = mbedtls_mpi_read_binary_le(&m, k, kKeyBytes);
  if (rc == 0) rc = mbedtls_mpi_read_binary_le(&P.X, ub, kKeyBytes);
  if (rc == 0) rc = mbedtls_mpi_lset(&P.Z, 1);
  if (rc != 0) {
    st = Status::Internal("x25519: mbedTLS setup failed");
  } else {
    // Non-canonical u >= p is reduced mod p as RFC 7748 requires.
    if (mbedtls_mpi_cmp_mpi(&P.X, &grp.P) >= 0) rc = mbedtls_mpi_sub_mpi(&P.X, &P.X, &grp.P);
    if (rc == 0) rc = mbedtls_ecp_mul(&grp, &R, &m, &P, nullptr, nullptr);
    if (rc == MBEDTLS_ERR_ECP_INVALID_KEY) st = Status::InvalidArgument("x25519: peer key is a low-order point");
    else if (rc != 0) st = Status::Internal("x25519: scalar multiplication failed");
    else if (mbedtls_mpi_write_binary_le(&R.X, out, kKeyBytes) != 0) st = Status::Internal("x25519: output failed");
  }
  if (st.ok()) {
    uint8_t acc = 0;
    for (size_t i = 0; i < kKeyBytes; ++i) acc |= out[i];
    if (acc == 0) st = Status::InvalidArgument("x25519: all-zero shared secret (low-order peer key)");
  }
  mbedtls_mpi_free(&m);
  mbedtls_ecp_point_free(&R);
  mbedtls_ecp_point_free(&P);
  mbedtls_ecp_group_free(&grp);
  Wipe(k, sizeof k);
  return st;
}

Status X25519Public(const uint8_t secret[kKeyBytes], uint8_t pub[kKeyBytes]) {
  uint8_t base[kKeyBytes] = {9};
  return X25519(secret, base, pub);
}

}  // namespace fedrt::secagg
