/* c_api_unit_test: the C API's contracts without a coordinator, in C99
 * (fedrt/mcu_device.h): workspace sizing, init on the caller's buffer and
 * its refusals, the sample store (fedrt_feed: order, NaN/Inf, dimension,
 * capacity, after fedrt_feed_done), and a first poll that needs the transport.
 * Exits 0 when every check holds, 1 with the failed checks printed. */
#define _POSIX_C_SOURCE 200112L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedrt/mcu_device.h"

static int failures = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

static size_t sent = 0;
static int send_cb(void* ctx, const uint8_t* data, size_t n) {
  (void)ctx;
  (void)data;
  sent += n;
  return (int)n;
}
static int recv_cb(void* ctx, uint8_t* data, size_t n) {
  (void)ctx;
  (void)data;
  (void)n;
  return 0; /* nothing ever arrives */
}
static uint32_t clock_ms = 1000;
static uint32_t now_cb(void* ctx) {
  (void)ctx;
  return clock_ms;
}
static int entropy_cb(void* ctx, uint8_t* out, size_t n) {
  size_t i;
  (void)ctx;
  for (i = 0; i < n; ++i) out[i] = (uint8_t)(i * 37u + 11u);
  return 0;
}

static fedrt_config config(void) {
  static const uint8_t psk[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  fedrt_config c;
  memset(&c, 0, sizeof c);
  c.device_id = "dev0000";
  c.psk = psk;
  c.psk_len = sizeof psk;
  c.cb.send = send_cb;
  c.cb.recv = recv_cb;
  c.cb.now_ms = now_cb;
  c.cb.entropy = entropy_cb;
  return c;
}

int main(void) {
  fedrt_capacity cap, big;
  fedrt_config cfg = config();
  fedrt_device* dev = NULL;
  fedrt_poll_result what;
  void* buf = NULL;
  size_t need, need_big;
  float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  int i;

  /* Sizing: grows with capacities, 0 for invalid ones. */
  memset(&cap, 0, sizeof cap);
  cap.max_dim = 4;
  cap.max_samples = 3;
  cap.secagg = 0;
  big = cap;
  big.max_samples = 1000;
  need = fedrt_workspace_size(&cap);
  need_big = fedrt_workspace_size(&big);
  CHECK(need > 0);
  CHECK(need_big + 2 * 15 >= need + 4 * 997 * 5); /* 997 more examples of 4 features + label, float32 (16-aligned) */
  big = cap;
  big.max_dim = 0;
  CHECK(fedrt_workspace_size(&big) == 0);
  big.max_dim = 100000; /* over the wire limit */
  CHECK(fedrt_workspace_size(&big) == 0);
  CHECK(fedrt_workspace_size(NULL) == 0);
  big = cap;
  big.models = 8; /* no such model */
  CHECK(fedrt_workspace_size(&big) == 0);
  big.models = FEDRT_MODEL_LOGISTIC | FEDRT_MODEL_SOFTMAX; /* no least-squares Abar_c and prox factor (2 d^2 floats) */
  CHECK(fedrt_workspace_size(&big) > 0 && fedrt_workspace_size(&big) < need);
  big.models = FEDRT_MODEL_LEAST_SQUARES;
  CHECK(fedrt_workspace_size(&big) == need);
  printf("workspace: d = 4, 3 samples: %lu bytes; 1000 samples: %lu bytes\n", (unsigned long)need,
         (unsigned long)need_big);

  /* Init: the caller's buffer, refused when too small, misaligned or callbacks are missing. */
  if (posix_memalign(&buf, 16, need + 16) != 0) return 1;
  CHECK(fedrt_device_init(buf, need - 1, &cap, &cfg, &dev) == FEDRT_ENOMEM && dev == NULL);
  CHECK(fedrt_device_init((uint8_t*)buf + 8, need, &cap, &cfg, &dev) == FEDRT_EINVAL && dev == NULL);
  cfg.cb.entropy = NULL;
  CHECK(fedrt_device_init(buf, need, &cap, &cfg, &dev) == FEDRT_EINVAL && dev == NULL);
  cfg = config();
  cfg.psk_len = 8; /* PSKs have 16..64 bytes */
  CHECK(fedrt_device_init(buf, need, &cap, &cfg, &dev) == FEDRT_EINVAL && dev == NULL);
  cfg = config();
  CHECK(fedrt_device_init(buf, need, &cap, &cfg, &dev) == FEDRT_OK && dev != NULL);
  CHECK((void*)dev >= buf && (uint8_t*)dev < (uint8_t*)buf + need);

  /* The store: in order, checked values and dimensions, bounded, closed by feed_done. */
  CHECK(fedrt_feed(dev, x, 4, 1.0f) == FEDRT_OK);
  CHECK(fedrt_feed(dev, x, 3, 1.0f) == FEDRT_EINVAL);
  CHECK(strstr(fedrt_last_error(dev), "another number of features") != NULL);
  x[2] = (float)NAN;
  CHECK(fedrt_feed(dev, x, 4, 1.0f) == FEDRT_EINVAL);
  CHECK(strstr(fedrt_last_error(dev), "example 1, feature 2") != NULL);
  x[2] = 3.0f;
  CHECK(fedrt_feed(dev, x, 4, (float)INFINITY) == FEDRT_EINVAL);
  CHECK(strstr(fedrt_last_error(dev), "label") != NULL);
  CHECK(fedrt_feed(dev, x, 4, 0.0f) == FEDRT_OK);
  CHECK(fedrt_feed(dev, x, 4, -1.0f) == FEDRT_OK);
  CHECK(fedrt_feed(dev, x, 4, 1.0f) == FEDRT_ENOMEM); /* capacity 3 */
  CHECK(fedrt_feed_done(dev) == FEDRT_OK);
  CHECK(fedrt_feed(dev, x, 4, 1.0f) == FEDRT_ESTATE);

  /* Polling: the handshake's first flight goes out, then the device waits for bytes
   * until the handshake timeout (5000 ms by default) has passed on its clock. */
  CHECK(fedrt_poll(dev, &what) == FEDRT_NEED_READ);
  CHECK(sent > 0);
  CHECK(what.wait_ms > 0 && what.wait_ms <= 5000);
  clock_ms += 2000;
  CHECK(fedrt_poll(dev, &what) == FEDRT_NEED_READ && what.wait_ms <= 3000);
  for (i = 0; i < 3; ++i) {
    clock_ms += 5000; /* each failed handshake starts a new session after draining */
    (void)fedrt_poll(dev, &what);
  }
  CHECK(what.need == FEDRT_NEED_READ);

  CHECK(strcmp(fedrt_strerror(FEDRT_ENOMEM), "not enough memory") == 0);
  CHECK(strcmp(fedrt_strerror(12345), "unknown status") == 0);
  free(buf);
  if (failures == 0) printf("c_api_unit_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
