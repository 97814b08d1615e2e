// Validation of the per-device provisioning block (provision.h).

#include "provision.h"

#include <string.h>

extern const uint8_t fedrt_provision_block[];

uint32_t fedrt_crc32(const void* data, size_t n) {
  const uint8_t* p = (const uint8_t*)data;
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

FedrtProvisionStatus fedrt_provision_parse(const void* blob, size_t capacity, const FedrtProvisionV1** out) {
  FedrtProvisionHeader h;
  if (capacity < sizeof h) return kFedrtProvisionBadSize;
  memcpy(&h, blob, sizeof h);
  if (h.magic != FEDRT_PROVISION_MAGIC) return kFedrtProvisionMissing;
  if (h.version != FEDRT_PROVISION_VERSION || h.header_size != sizeof h) return kFedrtProvisionBadVersion;
  if (h.payload_size < sizeof(FedrtProvisionV1) || h.payload_size > capacity - sizeof h)
    return kFedrtProvisionBadSize;
  const uint8_t* payload = (const uint8_t*)blob + sizeof h;
  if (fedrt_crc32(payload, h.payload_size) != h.crc32) return kFedrtProvisionBadCrc;
  const FedrtProvisionV1* v = (const FedrtProvisionV1*)payload;
  if (v->psk_len == 0 || v->psk_len > FEDRT_PROVISION_PSK_MAX) return kFedrtProvisionBadField;
  if (v->device_id[0] == 0) return kFedrtProvisionBadField;
  if (v->reserved[0] | v->reserved[1] | v->reserved[2]) return kFedrtProvisionBadField;
  if (out) *out = v;
  return kFedrtProvisionOk;
}

FedrtProvisionStatus fedrt_provision_get(const FedrtProvisionV1** out) {
  return fedrt_provision_parse(fedrt_provision_block, FEDRT_PROVISION_CAPACITY, out);
}

const uint8_t* fedrt_provision_extension(size_t* len) {
  *len = 0;
  if (fedrt_provision_get(0) != kFedrtProvisionOk) return 0;
  FedrtProvisionHeader h;
  memcpy(&h, fedrt_provision_block, sizeof h);
  *len = h.payload_size - sizeof(FedrtProvisionV1);
  return fedrt_provision_block + sizeof h + sizeof(FedrtProvisionV1);
}

const char* fedrt_provision_status_name(FedrtProvisionStatus s) {
  switch (s) {
    case kFedrtProvisionOk: return "ok";
    case kFedrtProvisionMissing: return "no provisioning blob loaded (bad magic)";
    case kFedrtProvisionBadVersion: return "provisioning blob has an unknown version or header size";
    case kFedrtProvisionBadSize: return "provisioning blob payload size is out of range";
    case kFedrtProvisionBadCrc: return "provisioning blob CRC mismatch (corrupted)";
    case kFedrtProvisionBadField: return "provisioning blob has an invalid field (psk_len, device_id or reserved)";
  }
  return "?";
}

_Static_assert(sizeof(FedrtProvisionHeader) == 16, "provision header layout");
_Static_assert(sizeof(FedrtProvisionV1) == 112, "provision v1 layout (make_provision.py packs the same)");
