#pragma once
// Per-device provisioning block of fedrt firmware on mps2. The boards have no
// TRNG and no per-device storage, so identity, key and entropy seed come from
// a fixed, linker-reserved 4 KB region (section .provision at
// fedrt_provision_block, 0x00017000 on an385/an386, 0x0001F000 with the large
// layout of mps2-an38x-large.ld) that QEMU fills at start:
//   -device loader,file=blob.bin,addr=0x00017000   (qemu-run.sh --provision blob.bin)
// The blob is written on the host by platform/mps2/make_provision.py.
//
// Layout (little endian, no padding):
//   FedrtProvisionHeader  magic "FRPV" (0x56505246), version, header_size,
//                         payload_size, crc32 (IEEE 802.3, zlib's) of the payload
//   payload               FedrtProvisionV1 (fixed fields below), then
//                         `payload_size - sizeof(FedrtProvisionV1)` bytes of
//                         application extension (e.g. fedrt-fw's data), covered by the CRC.
// Compatible changes append fields to the extension; an incompatible change
// bumps version.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FEDRT_PROVISION_MAGIC 0x56505246u  // "FRPV" in memory order
#define FEDRT_PROVISION_VERSION 1u
#define FEDRT_PROVISION_ADDRESS 0x00017000u  // default layout; the linker's fedrt_provision_block is authoritative
#define FEDRT_PROVISION_CAPACITY 4096u
#define FEDRT_PROVISION_ID_MAX 32u    // device id / PSK identity, NUL-padded
#define FEDRT_PROVISION_PSK_MAX 32u   // PSK bytes
#define FEDRT_PROVISION_SEED_BYTES 32u

typedef struct __attribute__((packed)) {
  uint32_t magic;         // FEDRT_PROVISION_MAGIC
  uint16_t version;       // FEDRT_PROVISION_VERSION
  uint16_t header_size;   // sizeof(FedrtProvisionHeader) = 16
  uint32_t payload_size;  // bytes after the header, >= sizeof(FedrtProvisionV1)
  uint32_t crc32;         // CRC-32 of the payload_size payload bytes
} FedrtProvisionHeader;

typedef struct __attribute__((packed)) {
  uint32_t device_index;                          // index c of the agent in the experiment
  char device_id[FEDRT_PROVISION_ID_MAX];         // TLS PSK identity, NUL-padded (not NUL-terminated at 32)
  uint8_t psk_len;                                // 1..32
  uint8_t reserved[3];                            // zero
  uint8_t psk[FEDRT_PROVISION_PSK_MAX];           // pre-shared key
  uint8_t entropy_seed[FEDRT_PROVISION_SEED_BYTES];  // DRBG seed (unique per device and boot image)
  uint64_t experiment_seed;                       // seed of the experiment's RNG keys
} FedrtProvisionV1;

typedef enum {
  kFedrtProvisionOk = 0,
  kFedrtProvisionMissing = 1,      // wrong magic: no blob was loaded
  kFedrtProvisionBadVersion = 2,   // version or header size not understood
  kFedrtProvisionBadSize = 3,      // payload too small or larger than the region
  kFedrtProvisionBadCrc = 4,       // payload corrupted
  kFedrtProvisionBadField = 5,     // psk_len out of range, empty id, reserved bytes set
} FedrtProvisionStatus;

// Validates a blob of `capacity` bytes at `blob`; on success *out points to
// its fixed fields. Pure: used on the device and by tests.
FedrtProvisionStatus fedrt_provision_parse(const void* blob, size_t capacity, const FedrtProvisionV1** out);

// The block QEMU loaded at fedrt_provision_block (validated once per call).
FedrtProvisionStatus fedrt_provision_get(const FedrtProvisionV1** out);

// Extension bytes after FedrtProvisionV1 in a valid block (*len = 0 if none).
const uint8_t* fedrt_provision_extension(size_t* len);

// Short text for a status ("no provisioning blob loaded", ...).
const char* fedrt_provision_status_name(FedrtProvisionStatus s);

// CRC-32 (IEEE 802.3, reflected, init and final xor 0xFFFFFFFF), as zlib.crc32.
uint32_t fedrt_crc32(const void* data, size_t n);

#ifdef __cplusplus
}  // extern "C"
#endif
