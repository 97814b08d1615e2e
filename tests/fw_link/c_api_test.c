/* c_api_test: a device written in C99 over the C API (fedrt/mcu_device.h).
 * It reads its own-data CSV shard (header row, a label column), gives the
 * samples to the device in place, through the pull callback or with
 * fedrt_feed, and drives the device with fedrt_poll over an in-memory
 * transport: two small byte queues in this program's memory. The loop moves
 * the bytes between those queues and a TCP connection to a real
 * fedrt-coordinator. It exits 0 after the coordinator's Shutdown, 1 on an
 * error (printed), 2 on bad arguments. tests/fw_link/run_c_api.sh compares
 * the federation's rounds with the same fleet of C++ devices (fedrt-device).
 *
 *   c_api_test --coordinator HOST:PORT --id ID --key PSK_HEX_FILE --data SHARD.csv
 *              [--label NAME] [--samples inplace|pull|feed] [--binary] [--queue BYTES]
 *              [--max-dim D]
 * --binary: labels 0/1 become -1/+1 for the in-place arrays (the device does
 * that itself for pulled and fed samples). --max-dim: the largest model
 * dimension the workspace is sized for (default: the shard's feature count;
 * softmax regression needs d = K (p + 1)). */
#define _POSIX_C_SOURCE 200112L

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fedrt/mcu_device.h"

#define MAX_COLS 300
#define MAX_ROWS 4096
#define QUEUE_MAX 65536

/* A byte queue (FIFO) of fixed capacity. */
typedef struct queue {
  uint8_t buf[QUEUE_MAX];
  size_t head, len, cap;
} queue;

static size_t queue_put(queue* q, const uint8_t* d, size_t n) {
  size_t k = 0;
  while (k < n && q->len < q->cap) {
    q->buf[(q->head + q->len) % QUEUE_MAX] = d[k++];
    q->len++;
  }
  return k;
}

static size_t queue_get(queue* q, uint8_t* d, size_t n) {
  size_t k = 0;
  while (k < n && q->len > 0) {
    d[k++] = q->buf[q->head];
    q->head = (q->head + 1) % QUEUE_MAX;
    q->len--;
  }
  return k;
}

typedef struct app {
  queue to_device, from_device; /* the in-memory transport */
  int fd;
  char host[256], port[16];
  const char* id;
  float* x; /* rows x dim */
  float* y;
  uint32_t rows, dim;
  unsigned long pulls;
} app;

/* ---- the device's callbacks: the in-memory transport, clock, entropy, samples, log */
static int cb_send(void* ctx, const uint8_t* data, size_t n) {
  return (int)queue_put(&((app*)ctx)->from_device, data, n); /* 0 when full: would block */
}

static int cb_recv(void* ctx, uint8_t* data, size_t n) {
  app* a = (app*)ctx;
  if (a->fd < 0 && a->to_device.len == 0) return -1;
  return (int)queue_get(&a->to_device, data, n);
}

static uint32_t cb_now(void* ctx) {
  struct timespec t;
  (void)ctx;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint32_t)((uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u);
}

static int cb_entropy(void* ctx, uint8_t* out, size_t n) {
  FILE* f = fopen("/dev/urandom", "rb");
  size_t got;
  (void)ctx;
  if (f == NULL) return -1;
  got = fread(out, 1, n, f);
  fclose(f);
  return got == n ? 0 : -1;
}

static int tcp_connect(app* a) {
  struct addrinfo hints, *res = NULL, *p;
  if (a->fd >= 0) close(a->fd);
  a->fd = -1;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(a->host, a->port, &hints, &res) != 0) return -1;
  for (p = res; p != NULL; p = p->ai_next) {
    int s = socket(p->ai_family, p->ai_socktype, p->ai_protocol), one = 1;
    if (s < 0) continue;
    if (connect(s, p->ai_addr, p->ai_addrlen) == 0) {
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      a->fd = s;
      break;
    }
    close(s);
  }
  freeaddrinfo(res);
  return a->fd >= 0 ? 0 : -1;
}

static int cb_reconnect(void* ctx) {
  app* a = (app*)ctx;
  a->to_device.len = a->from_device.len = 0;
  return tcp_connect(a);
}

static int cb_sample(void* ctx, uint32_t index, float* features, uint32_t dim, float* label) {
  app* a = (app*)ctx;
  if (index >= a->rows) return 0;
  if (features == NULL) return 1;
  if (dim != a->dim) return -1;
  memcpy(features, a->x + (size_t)index * a->dim, sizeof(float) * dim);
  *label = a->y[index];
  a->pulls++;
  return 1;
}

static void cb_log(void* ctx, const char* line) { fprintf(stderr, "fw %s %s\n", ((app*)ctx)->id, line); }

/* ---- moving bytes between the queues and the coordinator's socket */
static int flush_to_socket(app* a) {
  uint8_t chunk[4096];
  while (a->from_device.len > 0 && a->fd >= 0) {
    size_t n = queue_get(&a->from_device, chunk, sizeof chunk), off = 0;
    while (off < n) {
      ssize_t w = send(a->fd, chunk + off, n - off, 0);
      if (w < 0) {
        if (errno == EINTR) continue;
        close(a->fd);
        a->fd = -1;
        return -1;
      }
      off += (size_t)w;
    }
  }
  return 0;
}

/* Waits up to ms for bytes from the coordinator and moves what fits into the device's queue. */
static void fill_from_socket(app* a, uint32_t ms) {
  uint8_t chunk[4096];
  struct pollfd p;
  size_t room = a->to_device.cap - a->to_device.len;
  ssize_t r;
  if (a->fd < 0 || room == 0) return;
  p.fd = a->fd;
  p.events = POLLIN;
  p.revents = 0;
  if (poll(&p, 1, (int)(ms > 1000 ? 1000 : ms)) <= 0) return;
  r = recv(a->fd, chunk, room < sizeof chunk ? room : sizeof chunk, 0);
  if (r > 0) {
    queue_put(&a->to_device, chunk, (size_t)r);
  } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(a->fd);
    a->fd = -1;
  }
}

/* ---- the shard: a CSV with a header row; every column but the label is a feature */
static int read_shard(app* a, const char* path, const char* label, int binary) {
  char line[16384];
  int label_col = -1, cols = 0, c;
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "c_api_test: cannot read %s\n", path);
    return -1;
  }
  if (fgets(line, sizeof line, f) == NULL) {
    fprintf(stderr, "c_api_test: %s: no header\n", path);
    fclose(f);
    return -1;
  }
  {
    char* tok = strtok(line, ",\r\n");
    for (; tok != NULL; tok = strtok(NULL, ",\r\n"), ++cols)
      if (strcmp(tok, label) == 0) label_col = cols;
  }
  if (label_col < 0 || cols < 2 || cols > MAX_COLS) {
    fprintf(stderr, "c_api_test: %s: no label column '%s'\n", path, label);
    fclose(f);
    return -1;
  }
  a->dim = (uint32_t)(cols - 1);
  a->x = (float*)malloc(sizeof(float) * MAX_ROWS * a->dim);
  a->y = (float*)malloc(sizeof(float) * MAX_ROWS);
  a->rows = 0;
  while (fgets(line, sizeof line, f) != NULL && a->rows < MAX_ROWS) {
    char* s = line;
    uint32_t k = 0;
    if (line[0] == '\n' || line[0] == '#') continue;
    for (c = 0; c < cols; ++c) {
      char* end;
      double v = strtod(s, &end);
      if (end == s) {
        fprintf(stderr, "c_api_test: %s:%u:%d: not a number\n", path, a->rows + 2, c + 1);
        fclose(f);
        return -1;
      }
      if (c == label_col)
        a->y[a->rows] = (float)(binary && v == 0.0 ? -1.0 : v);
      else
        a->x[(size_t)a->rows * a->dim + k++] = (float)v;
      s = end + (*end == ',' ? 1 : 0);
    }
    a->rows++;
  }
  fclose(f);
  return 0;
}

static const char* arg(int argc, char** argv, const char* name, const char* def) {
  int i;
  for (i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return def;
}

static int has_flag(int argc, char** argv, const char* name) {
  int i;
  for (i = 1; i < argc; ++i)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

int main(int argc, char** argv) {
  static app a;
  const char* coord = arg(argc, argv, "--coordinator", NULL);
  const char* key = arg(argc, argv, "--key", NULL);
  const char* data = arg(argc, argv, "--data", NULL);
  const char* mode = arg(argc, argv, "--samples", "feed");
  const char* colon;
  uint8_t psk[64];
  size_t psk_len = 0, ws_bytes;
  char hex[256];
  void* ws = NULL;
  FILE* kf;
  fedrt_capacity cap;
  fedrt_config cfg;
  fedrt_device* dev = NULL;
  fedrt_poll_result what;
  fedrt_stats st;
  int rc, inplace, fed = 0;
  unsigned polls = 0, reads = 0, writes = 0;

  a.id = arg(argc, argv, "--id", NULL);
  a.fd = -1;
  a.to_device.cap = a.from_device.cap = (size_t)atoi(arg(argc, argv, "--queue", "1024"));
  if (coord == NULL || a.id == NULL || key == NULL || data == NULL || a.to_device.cap == 0 ||
      a.to_device.cap > QUEUE_MAX || (colon = strrchr(coord, ':')) == NULL || (size_t)(colon - coord) >= sizeof a.host) {
    fprintf(stderr, "usage: c_api_test --coordinator HOST:PORT --id ID --key PSK_FILE --data SHARD.csv "
                    "[--label NAME] [--samples inplace|pull|feed] [--binary] [--queue BYTES] [--max-dim D]\n");
    return 2;
  }
  memcpy(a.host, coord, (size_t)(colon - coord));
  a.host[colon - coord] = '\0';
  strncpy(a.port, colon + 1, sizeof a.port - 1);
  inplace = strcmp(mode, "inplace") == 0;
  if (read_shard(&a, data, arg(argc, argv, "--label", "label"), inplace && has_flag(argc, argv, "--binary")) != 0) return 2;
  kf = fopen(key, "r");
  if (kf == NULL || fgets(hex, sizeof hex, kf) == NULL) {
    fprintf(stderr, "c_api_test: cannot read the PSK file %s\n", key);
    return 2;
  }
  fclose(kf);
  while (psk_len < sizeof psk && sscanf(hex + 2 * psk_len, "%2hhx", &psk[psk_len]) == 1) ++psk_len;

  /* The caller owns all memory: ask for the size, then give the buffer. */
  memset(&cap, 0, sizeof cap);
  cap.max_dim = (uint32_t)atoi(arg(argc, argv, "--max-dim", "0"));
  if (cap.max_dim == 0) cap.max_dim = a.dim;
  cap.max_samples = inplace ? 0 : a.rows;
  cap.secagg = 0;
  ws_bytes = fedrt_workspace_size(&cap);
  if (ws_bytes == 0 || posix_memalign(&ws, 16, ws_bytes) != 0) {
    fprintf(stderr, "c_api_test: no workspace for d = %u\n", cap.max_dim);
    return 1;
  }
  memset(&cfg, 0, sizeof cfg);
  cfg.device_id = a.id;
  cfg.psk = psk;
  cfg.psk_len = psk_len;
  cfg.cb.ctx = &a;
  cfg.cb.send = cb_send;
  cfg.cb.recv = cb_recv;
  cfg.cb.now_ms = cb_now;
  cfg.cb.entropy = cb_entropy;
  cfg.cb.reconnect = cb_reconnect;
  cfg.cb.log = cb_log;
  if (strcmp(mode, "pull") == 0) cfg.cb.sample = cb_sample;
  if (inplace) {
    cfg.features = a.x;
    cfg.labels = a.y;
    cfg.count = a.rows;
    cfg.dim = a.dim;
  }
  cfg.handshake_timeout_ms = 3000;
  rc = fedrt_device_init(ws, ws_bytes, &cap, &cfg, &dev);
  if (rc != FEDRT_OK) {
    fprintf(stderr, "c_api_test: fedrt_device_init: %s\n", fedrt_strerror(rc));
    return 1;
  }
  fprintf(stderr, "c_api_test: %s samples=%s rows=%u d=%u workspace=%lu bytes queue=%lu bytes\n", a.id, mode, a.rows,
          a.dim, (unsigned long)ws_bytes, (unsigned long)a.to_device.cap);
  if (tcp_connect(&a) != 0) {
    fprintf(stderr, "c_api_test: cannot connect to %s\n", coord);
    return 1;
  }

  for (;;) {
    fedrt_need need = fedrt_poll(dev, &what);
    ++polls;
    if (flush_to_socket(&a) != 0) fprintf(stderr, "c_api_test: the coordinator's connection broke\n");
    if (need == FEDRT_DONE) break;
    if (need == FEDRT_ERROR) {
      fprintf(stderr, "c_api_test: error: %s: %s\n", fedrt_strerror(what.status), what.message);
      return 1;
    }
    switch (need) {
      case FEDRT_NEED_READ:
        ++reads;
        fill_from_socket(&a, what.wait_ms);
        break;
      case FEDRT_NEED_WRITE:
        ++writes; /* the queue was flushed above */
        break;
      case FEDRT_NEED_SAMPLE: {
        uint32_t i;
        for (i = 0; i < a.rows; ++i) {
          rc = fedrt_feed(dev, a.x + (size_t)i * a.dim, a.dim, a.y[i]);
          if (rc != FEDRT_OK) {
            fprintf(stderr, "c_api_test: fedrt_feed: %s: %s\n", fedrt_strerror(rc), fedrt_last_error(dev));
            return 1;
          }
        }
        fedrt_feed_done(dev);
        fed = 1;
        break;
      }
      case FEDRT_WAIT: {
        struct timespec t;
        t.tv_sec = what.wait_ms / 1000;
        t.tv_nsec = (long)(what.wait_ms % 1000) * 1000000L;
        nanosleep(&t, NULL);
        break;
      }
      default:
        break;
    }
  }
  fedrt_get_stats(dev, &st);
  fprintf(stderr,
          "c_api_test: %s done sessions=%u rounds=%u results=%u polls=%u need_read=%u need_write=%u fed=%d pulled=%lu "
          "tls_heap_max_bytes=%lu workspace_max_bytes=%lu workspace_bytes=%lu\n",
          a.id, st.sessions, st.rounds, st.results, polls, reads, writes, fed, a.pulls,
          (unsigned long)st.tls_heap_max_bytes, (unsigned long)st.workspace_max_bytes, (unsigned long)st.workspace_bytes);
  free(ws);
  free(a.x);
  free(a.y);
  return 0;
}
