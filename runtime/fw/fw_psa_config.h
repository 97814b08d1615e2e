/* PSA crypto configuration of the fedrt firmware (MBEDTLS_PSA_CRYPTO_CONFIG,
 * included by runtime/fw/fw_mbedtls_config.h): what TLS 1.3 psk_dhe_ke with
 * TLS_CHACHA20_POLY1305_SHA256 over X25519 uses, nothing more. Without it PSA
 * would enable every algorithm the legacy modules allow (TLS 1.2 PRF,
 * PBKDF2, ...): about 1.1 KB more flash. */
#ifndef FEDRT_FW_PSA_CONFIG_H
#define FEDRT_FW_PSA_CONFIG_H

#define PSA_WANT_ALG_SHA_256 1
#define PSA_WANT_ALG_HMAC 1
#define PSA_WANT_ALG_HKDF_EXTRACT 1
#define PSA_WANT_ALG_HKDF_EXPAND 1
#define PSA_WANT_ALG_CHACHA20_POLY1305 1
#define PSA_WANT_ALG_ECDH 1
#define PSA_WANT_ECC_MONTGOMERY_255 1
#define PSA_WANT_KEY_TYPE_DERIVE 1
#define PSA_WANT_KEY_TYPE_HMAC 1
#define PSA_WANT_KEY_TYPE_CHACHA20 1
#define PSA_WANT_KEY_TYPE_ECC_PUBLIC_KEY 1
#define PSA_WANT_KEY_TYPE_ECC_KEY_PAIR_BASIC 1
#define PSA_WANT_KEY_TYPE_ECC_KEY_PAIR_IMPORT 1
#define PSA_WANT_KEY_TYPE_ECC_KEY_PAIR_EXPORT 1
#define PSA_WANT_KEY_TYPE_ECC_KEY_PAIR_GENERATE 1

#endif /* FEDRT_FW_PSA_CONFIG_H */
