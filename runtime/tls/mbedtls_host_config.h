/* The host's mbedTLS (coordinator, Linux device, tools), built from Debian's
 * mbedtls 2.28 source package by cmake/host_mbedtls.cmake. Included at the
 * end of the package's include/mbedtls/config.h (MBEDTLS_USER_CONFIG_FILE).
 *
 * Debian's binary package sets these at build time (debian/rules); the
 * project keeps the ones it may use so that the library behaves as the
 * packaged one does: */
#define MBEDTLS_THREADING_C
#define MBEDTLS_THREADING_PTHREAD
#define MBEDTLS_CMAC_C

/* What the packaged library lacks (docs/scale.md, "Memory per connection"):
 * a session's record buffers start at 16 KiB each way for the handshake and
 * shrink to the negotiated max_fragment_length once it ends. Devices ask for
 * 2048-byte records, so an established session holds about 4.7 KB of record
 * buffers instead of 33 KB. */
#define MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH
