/* libsodium 1.0.18's ref10 X25519 ladder (Debian's libsodium source package,
 * fetched by scripts/fetch_sources.sh; audited with libsodium in 2017),
 * compiled here so that only the ladder is kept: its base-point variant and
 * its precomputed Edwards tables are not referenced, and --gc-sections drops
 * them. The field arithmetic (ed25519_ref10.c) is in the same unit, so its
 * inline multiplication and squaring exist once. fedrt_x25519_ref10(q, n, p) is libsodium's
 * crypto_scalarmult_curve25519_ref10: q = X25519(clamp(n), p), -1 for a
 * low-order p. Device code: no heap, constant time. */
#include "crypto_core/ed25519/ref10/ed25519_ref10.c"
#include "crypto_scalarmult/curve25519/ref10/x25519_ref10.c"

int fedrt_x25519_ref10(unsigned char* q, const unsigned char* n, const unsigned char* p);

int fedrt_x25519_ref10(unsigned char* q, const unsigned char* n, const unsigned char* p) {
  return crypto_scalarmult_curve25519_ref10(q, n, p);
}
