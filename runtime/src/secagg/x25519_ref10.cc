// X25519 of fedrt/secagg/crypto.h over libsodium's ref10 ladder
// (x25519_ref10_ladder.c): the firmware's, about 10 times fewer Cortex-M4F
// instructions than mbedTLS's generic bignum code and no heap. Same function
// as x25519_sodium.cc (RFC 7748), so devices on either agree
// (tests/secagg/crypto_kat_test.cc).
#include <cstring>

#include "fedrt/secagg/crypto.h"

extern "C" int fedrt_x25519_ref10(unsigned char* q, const unsigned char* n, const unsigned char* p);

namespace fedrt::secagg {

Status X25519(const uint8_t scalar[kKeyBytes], const uint8_t u[kKeyBytes], uint8_t out[kKeyBytes]) {
  // ref10 clamps the scalar, ignores u's top bit and reduces a non-canonical u mod p.
  if (fedrt_x25519_ref10(out, scalar, u) != 0) return Status::InvalidArgument("x25519: peer key is a low-order point");
  uint8_t acc = 0;
  for (size_t i = 0; i < kKeyBytes; ++i) acc |= out[i];
  if (acc == 0) return Status::InvalidArgument("x25519: all-zero shared secret (low-order peer key)");
  return Status::Ok();
}

Status X25519Public(const uint8_t secret[kKeyBytes], uint8_t pub[kKeyBytes]) {
  static const uint8_t kBase[kKeyBytes] = {9};
  return X25519(secret, kBase, pub);
}

}  // namespace fedrt::secagg
