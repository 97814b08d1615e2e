/* The host's mbedTLS (coordinator, Linux device, tools), built from Debian's
 * mbedtls 3.6 LTS source package by cmake/host_mbedtls.cmake. Included at the
 * end of the package's include/mbedtls/mbedtls_config.h
 * (MBEDTLS_USER_CONFIG_FILE), whose defaults already hold TLS 1.3
 * (MBEDTLS_SSL_PROTO_TLS1_3, PSA crypto) next to TLS 1.2.
 *
 * Debian's binary package sets these at build time (debian/rules); the
 * project keeps the ones it may use so that the library behaves as the
 * packaged one does: */
#define MBEDTLS_THREADING_C
#define MBEDTLS_THREADING_PTHREAD
#define MBEDTLS_CMAC_C

/* What the packaged library lacks (docs/scale.md, "Memory per connection"):
 * a session's record buffers start at their full size for the handshake and
 * shrink to the negotiated record size once it ends. */
#define MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH

/* No persistent PSA keys: nothing of the project stores keys through PSA, so
 * no key file may appear in a program's working directory. */
#undef MBEDTLS_PSA_CRYPTO_STORAGE_C
#undef MBEDTLS_PSA_ITS_FILE_C

/* Record sizes (docs/scale.md, "Memory per connection"). mbedTLS 3.6 keeps
 * a TLS 1.3 session's buffers (and its handshake state) at their handshake
 * size for the session's life: TLS 1.3 has no max_fragment_length, and the
 * library frees the handshake only with the session. So the sizes are set
 * here, small:
 * - incoming: at most 4096 bytes of plaintext a record. The project's peers
 *   send at most 2048 (Linux devices and the coordinator) or 1024 (firmware);
 *   the rest is room for a foreign client's ClientHello. A client that sends
 *   larger records is refused with a record_overflow alert.
 * - outgoing: at most 2048 bytes a record, handshake messages included (the
 *   largest, a P-256 certificate of fedrt-keys, is under 1 KB). */
#define MBEDTLS_SSL_IN_CONTENT_LEN 4096
#define MBEDTLS_SSL_OUT_CONTENT_LEN 2048
