/* fedrt-fw-own: a Cortex-M4F device (QEMU mps2-an386) that trains on the shard
 * compiled into its flash, written in C99 against the C API alone
 * (fedrt/mcu_device.h). The shard is a const array generated at build time
 * from a CSV shard (shard_to_c.py). Built with FEDRT_OWN_SHARD_BLOB
 * (fedrt-fw-digits), the shard is instead a per-device blob in the flash
 * region at fedrt_shard_block (shard_to_blob.py, loaded by qemu-run.sh
 * --shard), so one image serves every device; identity and PSK come from the
 * provisioning block (platform/mps2/provision.h); the task comes from the
 * coordinator. UART1 is the transport (QEMU bridges it to TCP), UART0 the
 * console. The device lives in a static buffer sized at build time and checked
 * against fedrt_workspace_size() at boot; it polls until the coordinator's
 * Shutdown, prints its memory high-water marks and exits with 0 (1 on failure). */
#include <stdint.h>
#include <string.h>

#include "fedrt/mcu_device.h"
#include "mps2.h"
#include "provision.h"

#include "shard_blob.h"
#ifdef FEDRT_OWN_SHARD_BLOB
/* The shard region of the linker script (mps2-an386-nrf52840.ld). */
extern const uint8_t fedrt_shard_block[];
extern const uint8_t fedrt_shard_block_size[];
#else
/* The shard in flash (shard_to_c.py). */
extern const float fedrt_shard_features[];
extern const float fedrt_shard_labels[];
extern const uint32_t fedrt_shard_rows;
extern const uint32_t fedrt_shard_dim;
#endif

#ifndef FEDRT_OWN_WORKSPACE_BYTES
#define FEDRT_OWN_WORKSPACE_BYTES 32768
#endif
#ifndef FEDRT_OWN_MAX_DIM
#define FEDRT_OWN_MAX_DIM 16
#endif
#ifndef FEDRT_OWN_SECAGG
#define FEDRT_OWN_SECAGG 0 /* 1: the workspace holds SecAgg+ rounds */
#endif
#ifndef FEDRT_OWN_MODELS
#define FEDRT_OWN_MODELS 0 /* FEDRT_MODEL_* bits the workspace is sized for; 0 = every model */
#endif

static uint64_t g_workspace[FEDRT_OWN_WORKSPACE_BYTES / 8 + 2]; /* 16-aligned below */
static char g_id[FEDRT_PROVISION_ID_MAX + 1];
static const FedrtProvisionV1* g_prov;
static uint64_t g_entropy_state;

static int uart_send(void* ctx, const uint8_t* data, size_t n) {
  (void)ctx;
  mps2_uart_write(kMps2UartLink, data, n);
  return (int)n;
}

static int uart_recv(void* ctx, uint8_t* data, size_t n) {
  (void)ctx;
  return (int)mps2_uart_read(kMps2UartLink, data, n, 0); /* what has arrived, without waiting */
}

static uint32_t millis(void* ctx) {
  (void)ctx;
  return mps2_millis();
}

/* The board has no TRNG: the provisioned seed (fresh per device and launch)
 * first, then splitmix64 over it. */
static int entropy(void* ctx, uint8_t* out, size_t n) {
  size_t i;
  (void)ctx;
  for (i = 0; i < n; ++i) {
    if (g_entropy_state < FEDRT_PROVISION_SEED_BYTES) {
      out[i] = g_prov->entropy_seed[g_entropy_state++];
    } else {
      uint64_t z = (g_entropy_state++ + 0x9E3779B97F4A7C15u) ^ ((uint64_t)g_prov->entropy_seed[i % 32] << 32);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
      out[i] = (uint8_t)(z ^ (z >> 31));
    }
  }
  return 0;
}

static void console_log(void* ctx, const char* line) {
  (void)ctx;
  mps2_puts("[fw] ");
  mps2_put_u32(mps2_millis());
  mps2_puts(" ");
  mps2_puts(g_id);
  mps2_puts(" ");
  mps2_puts(line);
  mps2_puts("\n");
}

static int fail(const char* what, const char* detail) {
  mps2_puts("[fw] error: ");
  mps2_puts(what);
  mps2_puts(": ");
  mps2_puts(detail);
  mps2_puts("\n");
  return 1;
}

int main(void) {
  fedrt_capacity cap;
  fedrt_config cfg;
  fedrt_device* dev = 0;
  fedrt_poll_result what;
  fedrt_stats st;
  size_t need;
  void* ws = (void*)(((uintptr_t)g_workspace + 15u) & ~(uintptr_t)15u);
  int rc;
  FedrtProvisionStatus ps;
  fedrt_shard_view shard;
#ifdef FEDRT_OWN_SHARD_BLOB
  const char* why;
#endif

  mps2_uart_init(kMps2UartConsole);
  mps2_uart_init(kMps2UartLink);
  ps = fedrt_provision_get(&g_prov);
  if (ps != kFedrtProvisionOk) return fail("provisioning block", fedrt_provision_status_name(ps));
  memcpy(g_id, g_prov->device_id, FEDRT_PROVISION_ID_MAX);
  g_id[FEDRT_PROVISION_ID_MAX] = '\0';

#ifdef FEDRT_OWN_SHARD_BLOB
  why = fedrt_shard_open(fedrt_shard_block, (size_t)(uintptr_t)fedrt_shard_block_size, &shard);
  if (why != NULL) return fail("shard region", why);
#else
  shard.features = fedrt_shard_features;
  shard.labels = fedrt_shard_labels;
  shard.rows = fedrt_shard_rows;
  shard.dim = fedrt_shard_dim;
#endif

  memset(&cap, 0, sizeof cap);
  cap.max_dim = FEDRT_OWN_MAX_DIM;
  cap.max_samples = 0; /* the samples stay in flash */
  cap.secagg = FEDRT_OWN_SECAGG;
  cap.models = FEDRT_OWN_MODELS;
  need = fedrt_workspace_size(&cap);
  mps2_report_u32("workspace_need", (uint32_t)need);
  if (need == 0 || need > FEDRT_OWN_WORKSPACE_BYTES) return fail("workspace", "fedrt_workspace_size exceeds the static buffer");

  memset(&cfg, 0, sizeof cfg);
  cfg.device_id = g_id;
  cfg.psk = g_prov->psk;
  cfg.psk_len = g_prov->psk_len;
  cfg.cb.send = uart_send;
  cfg.cb.recv = uart_recv;
  cfg.cb.now_ms = millis;
  cfg.cb.entropy = entropy;
  cfg.cb.log = console_log;
  cfg.features = shard.features;
  cfg.labels = shard.labels;
  cfg.count = shard.rows;
  cfg.dim = shard.dim;
  cfg.handshake_timeout_ms = 3000;
  rc = fedrt_device_init(ws, FEDRT_OWN_WORKSPACE_BYTES, &cap, &cfg, &dev);
  if (rc != FEDRT_OK) return fail("fedrt_device_init", fedrt_strerror(rc));
  mps2_puts("[fw] boot capi rows=");
  mps2_put_u32(shard.rows);
  mps2_puts(" d=");
  mps2_put_u32(shard.dim);
  mps2_puts(" workspace=");
  mps2_put_u32((uint32_t)need);
  mps2_puts("\n");

  for (;;) {
    const fedrt_need n = fedrt_poll(dev, &what);
    if (n == FEDRT_DONE || n == FEDRT_ERROR) break;
    if (n == FEDRT_NEED_READ || n == FEDRT_WAIT) mps2_uart_wait(kMps2UartLink, what.wait_ms); /* sleeps in WFI */
  }
  fedrt_get_stats(dev, &st);
  mps2_report_u32("tls_heap_hwm", (uint32_t)st.tls_heap_max_bytes);
  mps2_report_u32("tls_heap_size", (uint32_t)st.tls_heap_bytes);
  mps2_report_u32("workspace_hwm", (uint32_t)st.workspace_max_bytes);
  mps2_report_u32("workspace_size", (uint32_t)st.workspace_bytes);
  mps2_report_u32("sessions", st.sessions);
  mps2_report_u32("rounds", st.rounds);
  if (what.need == FEDRT_ERROR) return fail(fedrt_strerror(what.status), what.message);
  return 0;
}
