/* mcu_device.h: the device API for microcontrollers, in C99.
 *
 * A device trains on its own samples with a coordinator over TLS 1.2 PSK
 * (docs/architecture.md, "Round protocol"; docs/data.md). The caller owns all
 * memory: fedrt_workspace_size() says how many bytes a device of given
 * capacities needs, fedrt_device_init() places the device in the caller's
 * buffer. The transport, a millisecond clock and entropy are callbacks.
 * fedrt_poll() never blocks: it does what the transport allows and says what
 * it needs next (bytes to read, room to write, the samples, time to pass),
 * until the coordinator ends the federation. Samples are read in place (a
 * shard in flash), pulled by a callback, or pushed with fedrt_feed().
 *
 * Globals: none per device, except mbedTLS's buffer allocator (one pointer to
 * the TLS heap, which lives in the workspace): one device per program.
 * No heap, no exceptions; float32 arithmetic.
 */
#ifndef FEDRT_MCU_DEVICE_H
#define FEDRT_MCU_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: 0 success, negative errors. */
typedef enum fedrt_status {
  FEDRT_OK = 0,
  FEDRT_EINVAL = -1,      /* a bad argument or sample */
  FEDRT_ENOMEM = -2,      /* the buffer or the sample store is too small */
  FEDRT_ESTATE = -3,      /* not allowed in this state (e.g. feed after feed_done) */
  FEDRT_EREFUSED = -4,    /* this device refused the coordinator's task */
  FEDRT_EDENIED = -5,     /* the coordinator refused this device */
  FEDRT_EUNAVAILABLE = -6,/* no working session with the coordinator */
  FEDRT_EINTERNAL = -7
} fedrt_status;

/* What fedrt_poll() needs next. */
typedef enum fedrt_need {
  FEDRT_NEED_READ = 1,   /* bytes from the coordinator: call again when some arrived (or after wait_ms) */
  FEDRT_NEED_WRITE = 2,  /* room in the transport: call again when send() can take bytes */
  FEDRT_NEED_SAMPLE = 3, /* the task trains on own samples and none are there: fedrt_feed(), then fedrt_feed_done() */
  FEDRT_WAIT = 4,        /* nothing to do for wait_ms milliseconds (a reconnect backoff) */
  FEDRT_DONE = 5,        /* the coordinator ended the federation (final) */
  FEDRT_ERROR = 6        /* the device stopped: status and message say why (final) */
} fedrt_need;

typedef struct fedrt_poll_result {
  fedrt_need need;
  uint32_t wait_ms;    /* NEED_READ: ms until a timeout acts; WAIT: ms to let pass */
  int status;          /* FEDRT_ERROR: a fedrt_status */
  const char* message; /* FEDRT_ERROR: why, a static or device-owned string */
} fedrt_poll_result;

/* Models a workspace is sized for (fedrt_capacity.models, bits). */
#define FEDRT_MODEL_LEAST_SQUARES 1u /* its oracle holds Abar_c and the prox factor: 8 d^2 bytes */
#define FEDRT_MODEL_LOGISTIC 2u
#define FEDRT_MODEL_SOFTMAX 4u

/* What the workspace must hold. Zero-initialise it, then set the fields. */
typedef struct fedrt_capacity {
  uint32_t max_dim;     /* largest model dimension d a task may have (<= this image's wire bound:
                           256, or 650 for fedrt-fw-digits); softmax: K (p + 1) */
  uint32_t max_samples; /* examples the store holds (pulled or fed; 0 when samples are in place) */
  int secagg;           /* nonzero: room for SecAgg+ rounds */
  uint32_t models;      /* FEDRT_MODEL_* bits; 0 = every model. A task of another model whose
                           vectors do not fit is refused in TaskReply for memory. */
} fedrt_capacity;

typedef struct fedrt_callbacks {
  void* ctx; /* passed to every callback */
  /* Writes up to n bytes without waiting: > 0 taken, 0 would block, < 0 broken. */
  int (*send)(void* ctx, const uint8_t* data, size_t n);
  /* Reads up to n bytes without waiting: > 0 read, 0 none yet, < 0 broken. */
  int (*recv)(void* ctx, uint8_t* data, size_t n);
  /* Milliseconds of a monotonic clock, wrapping at 2^32. */
  uint32_t (*now_ms)(void* ctx);
  /* n random bytes (a TRNG) seeding the TLS and SecAgg+ generator: 0 on success. */
  int (*entropy)(void* ctx, uint8_t* out, size_t n);
  /* Optional: a new transport after a failed session, 0 on success (else
   * retried after a backoff). NULL: stale bytes are drained instead (a UART). */
  int (*reconnect)(void* ctx);
  /* Optional: example `index` (0, 1, ... in the shard's order) into
   * features[0..dim) and *label: 1 written, 0 no such example, < 0 failed.
   * features == NULL only asks whether the example exists. */
  int (*sample)(void* ctx, uint32_t index, float* features, uint32_t dim, float* label);
  /* Optional: one log line, no newline. */
  void (*log)(void* ctx, const char* line);
} fedrt_callbacks;

typedef struct fedrt_config {
  const char* device_id; /* = TLS PSK identity, 1..63 characters; must outlive the device */
  const uint8_t* psk;    /* 16..64 bytes; must outlive the device */
  size_t psk_len;
  fedrt_callbacks cb;
  /* Optional samples in place (e.g. const arrays in flash), read, never
   * written: count x dim features row-major and count labels (binary
   * logistic regression: -1/+1; softmax regression: class indices 0..K-1,
   * dim = p features of the model's d = K (p + intercept)). */
  const float* features;
  const float* labels;
  uint32_t count;
  uint32_t dim;
  uint32_t handshake_timeout_ms; /* 0: 5000 */
  uint32_t idle_timeout_ms;      /* 0: 120000 */
  uint32_t max_failed_sessions;  /* 0: 50 */
} fedrt_config;

typedef struct fedrt_device fedrt_device;

typedef struct fedrt_stats {
  uint32_t sessions, rounds, results, rejected_frames, rejected_records;
  size_t tls_heap_max_bytes, tls_heap_bytes, workspace_max_bytes, workspace_bytes;
} fedrt_stats;

/* Bytes of the buffer fedrt_device_init() needs for `cap`:
 * state + frames + TLS heap + 4 max_samples (max_dim + 1) + arena(max_dim),
 * the arena holding the local problem of the worst model in cap.models and
 * the worst optimisation-family session at max_dim; 0 when cap is invalid
 * (max_dim 0 or above this image's wire bound, unknown model bits). */
size_t fedrt_workspace_size(const fedrt_capacity* cap);

/* Places a device in `buffer` (16-byte aligned, `size` >= fedrt_workspace_size(cap)),
 * validates `config` and sets up TLS; *out points into the buffer. FEDRT_OK or an error. */
int fedrt_device_init(void* buffer, size_t size, const fedrt_capacity* cap, const fedrt_config* config,
                      fedrt_device** out);

/* Advances the device as far as the transport allows; returns what it needs
 * next (also in *what when not NULL). Never blocks; the local training of a
 * round runs inside one call. */
fedrt_need fedrt_poll(fedrt_device* dev, fedrt_poll_result* what);

/* Appends one example (dim features, label) to the store, in order.
 * FEDRT_EINVAL names a NaN/Inf value or a dim unlike the first example's;
 * FEDRT_ENOMEM when the store is full; FEDRT_ESTATE after fedrt_feed_done(). */
int fedrt_feed(fedrt_device* dev, const float* features, uint32_t dim, float label);

/* The store holds all examples: a task waiting on FEDRT_NEED_SAMPLE goes on. */
int fedrt_feed_done(fedrt_device* dev);

/* Counters and memory high-water marks. */
int fedrt_get_stats(const fedrt_device* dev, fedrt_stats* out);

/* The message of the last failed fedrt_feed on `dev` ("" if none); init errors go to the log callback. */
const char* fedrt_last_error(const fedrt_device* dev);

/* A fixed English name for a status code. */
const char* fedrt_strerror(int status);

#ifdef __cplusplus
}
#endif

#endif /* FEDRT_MCU_DEVICE_H */
