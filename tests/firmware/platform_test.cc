// The mps2 platform itself: time base, stack painting, no heap, provisioning
// block parsing (valid, missing, corrupted), console formatting does not trap.
// Run twice by ctest: without a blob (expects "missing") and, with the
// argument --expect-provision, with the blob written by make_provision.py
// (expects its fields: index 7, id "fw-test-7").

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw_check.h"
#include "provision.h"

extern "C" void* _sbrk(ptrdiff_t);

int main() {
  // Time advances and is monotonic.
  const uint64_t t0 = mps2_ticks();
  volatile uint32_t spin = 0;
  for (uint32_t i = 0; i < 20000; ++i) spin = spin + i;
  const uint64_t t1 = mps2_ticks();
  FW_CHECK(t1 > t0);
  FW_CHECK(mps2_ticks_per_second() == 25000000u);

  // No heap: the break never moves.
  errno = 0;
  FW_CHECK(_sbrk(16) == reinterpret_cast<void*>(-1));
  FW_CHECK(errno == ENOMEM);

  // The stack was painted at reset and main's frames are below the top.
  const uint32_t hwm = mps2_stack_high_water();
  FW_CHECK(hwm > 0 && hwm < mps2_stack_size());

  // CRC-32 check value of "123456789" (IEEE 802.3 / zlib).
  FW_CHECK(fedrt_crc32("123456789", 9) == 0xCBF43926u);

  // A blob built in RAM: valid, then corrupted in each way the parser rejects.
  static uint8_t blob[sizeof(FedrtProvisionHeader) + sizeof(FedrtProvisionV1) + 8];
  FedrtProvisionV1 v;
  memset(&v, 0, sizeof v);
  v.device_index = 3;
  memcpy(v.device_id, "dev-3", 5);
  v.psk_len = 16;
  FedrtProvisionHeader h = {FEDRT_PROVISION_MAGIC, FEDRT_PROVISION_VERSION, sizeof(FedrtProvisionHeader),
                            sizeof(FedrtProvisionV1) + 8, 0};
  uint8_t* payload = blob + sizeof h;
  memcpy(payload, &v, sizeof v);
  memcpy(payload + sizeof v, "extdata!", 8);
  h.crc32 = fedrt_crc32(payload, h.payload_size);
  memcpy(blob, &h, sizeof h);
  const FedrtProvisionV1* got = nullptr;
  FW_CHECK(fedrt_provision_parse(blob, sizeof blob, &got) == kFedrtProvisionOk);
  FW_CHECK(got != nullptr && got->device_index == 3 && got->psk_len == 16);
  FW_CHECK(fedrt_provision_parse(blob, sizeof blob - 1, nullptr) == kFedrtProvisionBadSize);
  payload[10] ^= 1;
  FW_CHECK(fedrt_provision_parse(blob, sizeof blob, nullptr) == kFedrtProvisionBadCrc);
  payload[10] ^= 1;
  blob[4] = 9;  // version
  FW_CHECK(fedrt_provision_parse(blob, sizeof blob, nullptr) == kFedrtProvisionBadVersion);
  blob[4] = FEDRT_PROVISION_VERSION;
  blob[0] ^= 0xFF;
  FW_CHECK(fedrt_provision_parse(blob, sizeof blob, nullptr) == kFedrtProvisionMissing);

  // The block QEMU loaded (or not).
  const FedrtProvisionStatus st = fedrt_provision_get(&got);
  mps2_puts("provisioning: ");
  mps2_puts(fedrt_provision_status_name(st));
  mps2_puts("\n");
  if (mps2_has_arg("--expect-provision")) {
    FW_CHECK(st == kFedrtProvisionOk);
    if (st == kFedrtProvisionOk) {
      FW_CHECK(got->device_index == 7);
      FW_CHECK(strncmp(got->device_id, "fw-test-7", FEDRT_PROVISION_ID_MAX) == 0);
      FW_CHECK(got->psk_len == 16 && got->psk[0] == 0x00 && got->psk[15] == 0x0f);
      FW_CHECK(got->entropy_seed[0] == 0xa0 && got->entropy_seed[31] == 0xbf);
      FW_CHECK(got->experiment_seed == 1234567890123ull);
      size_t n = 0;
      const uint8_t* ext = fedrt_provision_extension(&n);
      FW_CHECK(ext != nullptr && n == 0);
    }
  } else {
    FW_CHECK(st == kFedrtProvisionMissing);
  }

  mps2_puts("formatting: ");
  mps2_put_f32(-3.25f, 3);
  mps2_puts(" ");
  mps2_put_hex32(0xdeadbeefu);
  mps2_puts(" ");
  mps2_put_i32(-2147483647 - 1);
  mps2_puts("\n");
  return fw_result("platform_test");
}
