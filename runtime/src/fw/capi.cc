// The C API (fedrt/mcu_device.h) over the firmware device client
// (fedrt/fw/client.h): the device, the client's state, mbedTLS's heap and
// the workspace (sample store, local oracle, session arena) all lie in the
// caller's buffer, in that order. Device code: no heap, no exceptions.
#include "fedrt/mcu_device.h"

#include <cstring>
#include <new>

#include "fedrt/core/arena.h"
#include "fedrt/fw/client.h"
#include "fedrt/fw/nanopb_codec.h"

#ifndef FEDRT_CAPI_TLS_HEAP_BYTES
#define FEDRT_CAPI_TLS_HEAP_BYTES 8192  // TLS 1.3 session and PSA keys: high-water mark 5.7 KB (docs/tls.md)
#endif

using fedrt::Status;
using fedrt::StatusCode;
using fedrt::fw::FwClient;

struct fedrt_device {
  FwClient client;
  fedrt_callbacks cb;
  const char* last_error = "";
  size_t workspace_bytes = 0;
};

namespace {

constexpr size_t kAlign = 16;
constexpr size_t Up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
constexpr size_t kTlsHeap = FEDRT_CAPI_TLS_HEAP_BYTES;
constexpr uint32_t kAllModels = FEDRT_MODEL_LEAST_SQUARES | FEDRT_MODEL_LOGISTIC | FEDRT_MODEL_SOFTMAX;

int Code(const Status& st) {
  switch (st.code()) {
    case StatusCode::kOk: return FEDRT_OK;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange: return FEDRT_EINVAL;
    case StatusCode::kResourceExhausted: return FEDRT_ENOMEM;
    case StatusCode::kFailedPrecondition: return FEDRT_EREFUSED;
    case StatusCode::kPermissionDenied: return FEDRT_EDENIED;
    case StatusCode::kUnavailable: return FEDRT_EUNAVAILABLE;
    default: return FEDRT_EINTERNAL;
  }
}

fedrt_device* Dev(void* ctx) { return static_cast<fedrt_device*>(ctx); }
int Send(void* ctx, const uint8_t* d, size_t n) { return Dev(ctx)->cb.send(Dev(ctx)->cb.ctx, d, n); }
int Recv(void* ctx, uint8_t* d, size_t n) { return Dev(ctx)->cb.recv(Dev(ctx)->cb.ctx, d, n); }
uint32_t Now(void* ctx) { return Dev(ctx)->cb.now_ms(Dev(ctx)->cb.ctx); }
int Entropy(void* ctx, uint8_t* out, size_t n) { return Dev(ctx)->cb.entropy(Dev(ctx)->cb.ctx, out, n); }
int Reconnect(void* ctx) { return Dev(ctx)->cb.reconnect(Dev(ctx)->cb.ctx); }
int Pull(void* ctx, uint32_t i, float* x, uint32_t dim, float* y) { return Dev(ctx)->cb.sample(Dev(ctx)->cb.ctx, i, x, dim, y); }
void Log(void* ctx, const char* line) { Dev(ctx)->cb.log(Dev(ctx)->cb.ctx, line); }

// Sample store bytes in the arena (features, labels, alignment).
size_t StoreBytes(const fedrt_capacity& cap) {
  return Up(sizeof(float) * static_cast<size_t>(cap.max_samples) * cap.max_dim) + Up(sizeof(float) * cap.max_samples);
}

// The largest arena an optimisation-family task of dimension max_dim needs:
// every algorithm, with and without Fed-RR, raw or compressed with control
// variates, with SecAgg+ when asked.
size_t TaskArenaBytes(const fedrt_capacity& cap) {
  using namespace fedrt::task;
  using fedrt::compression::QuantizerKind;
  size_t most = 0;
  Task t;
  // The model whose oracle takes the most arena: least squares (Abar_c and the
  // prox factor), else softmax (K <= d logits), else logistic (none).
  const uint32_t models = cap.models == 0 ? kAllModels : cap.models;
  t.problem.kind = (models & FEDRT_MODEL_LEAST_SQUARES) != 0 ? ProblemKind::kLeastSquares
                   : (models & FEDRT_MODEL_SOFTMAX) != 0     ? ProblemKind::kSoftmax
                                                             : ProblemKind::kLogistic;
  t.problem.classes = cap.max_dim;  // K = d / (p + 1) < d: a bound of its logits
  t.problem.dim = cap.max_dim;
  t.problem.own_data = true;
  t.hyper.prox_mu = 1.0;
  t.num_algorithms = 1;
  const AlgorithmKind kinds[] = {AlgorithmKind::kFedAvg, AlgorithmKind::kScaffold, AlgorithmKind::kFedProx,
                                 AlgorithmKind::kFedProxExact};
  const QuantizerKind quantizers[] = {QuantizerKind::kNone, QuantizerKind::kDither, QuantizerKind::kRounding};
  for (AlgorithmKind k : kinds)
    for (int rr = 0; rr < 2; ++rr)
      for (QuantizerKind q : quantizers)
        for (int sec = 0; sec <= (cap.secagg ? 1 : 0); ++sec) {
          if (sec && q != QuantizerKind::kRounding) continue;
          t.algorithms[0].kind = k;
          t.algorithms[0].rr = rr != 0;
          t.compression.quantizer.kind = q;
          t.compression.control_variates = q != QuantizerKind::kNone;
          t.secagg.enabled = sec != 0;
          const size_t n = FwClient::TaskBytes(t);
          if (n > most) most = n;
        }
  return most;
}

}  // namespace

extern "C" {

size_t fedrt_workspace_size(const fedrt_capacity* cap) {
  if (cap == nullptr || cap->max_dim == 0 || cap->max_dim > fedrt::fw::MaxModelDim()) return 0;
  if ((cap->models & ~kAllModels) != 0) return 0;
  return Up(sizeof(fedrt_device)) + Up(FwClient::ImplBytes()) + Up(kTlsHeap) + StoreBytes(*cap) + TaskArenaBytes(*cap) +
         sizeof(fedrt::Arena) + 4 * kAlign;
}

int fedrt_device_init(void* buffer, size_t size, const fedrt_capacity* cap, const fedrt_config* c, fedrt_device** out) {
  if (out != nullptr) *out = nullptr;
  if (buffer == nullptr || cap == nullptr || c == nullptr || out == nullptr) return FEDRT_EINVAL;
  if ((reinterpret_cast<uintptr_t>(buffer) & (kAlign - 1)) != 0) return FEDRT_EINVAL;
  const size_t need = fedrt_workspace_size(cap);
  if (need == 0) return FEDRT_EINVAL;
  if (size < need) return FEDRT_ENOMEM;
  const fedrt_callbacks& cb = c->cb;
  if (cb.send == nullptr || cb.recv == nullptr || cb.now_ms == nullptr || cb.entropy == nullptr) return FEDRT_EINVAL;
  auto* base = static_cast<uint8_t*>(buffer);
  auto* dev = new (base) fedrt_device();
  dev->cb = cb;
  uint8_t* impl = base + Up(sizeof(fedrt_device));
  uint8_t* heap = impl + Up(FwClient::ImplBytes());
  uint8_t* ws = heap + Up(kTlsHeap);
  dev->workspace_bytes = size - static_cast<size_t>(ws - base);

  fedrt::fw::ClientOptions o;
  o.identity.device_id = c->device_id;
  o.identity.psk = c->psk;
  o.identity.psk_len = c->psk_len;
  o.samples.x = c->features;
  o.samples.y = c->labels;
  o.samples.rows = c->count;
  o.samples.dim = c->dim;
  if (cb.sample != nullptr) {
    o.samples.pull = Pull;
    o.samples.pull_ctx = dev;
  }
  o.samples.store_rows = cap->max_samples;
  o.samples.store_dim = cap->max_samples > 0 ? cap->max_dim : 0;
  o.link.ctx = dev;
  o.link.write = Send;
  o.link.read = Recv;
  o.link.now_ms = Now;
  o.link.entropy = Entropy;
  if (cb.reconnect != nullptr) o.link.reconnect = Reconnect;
  o.workspace = ws;
  o.workspace_bytes = dev->workspace_bytes;
  if (cb.log != nullptr) {
    o.log = Log;
    o.log_ctx = dev;
  }
  if (c->handshake_timeout_ms != 0) o.handshake_timeout_ms = c->handshake_timeout_ms;
  if (c->idle_timeout_ms != 0) o.idle_timeout_ms = c->idle_timeout_ms;
  if (c->max_failed_sessions != 0) o.max_failed_sessions = c->max_failed_sessions;
  const Status st = dev->client.init_at(o, impl, heap, kTlsHeap);
  if (!st.ok()) {
    if (cb.log != nullptr) cb.log(cb.ctx, st.message());
    return Code(st);
  }
  *out = dev;
  return FEDRT_OK;
}

fedrt_need fedrt_poll(fedrt_device* dev, fedrt_poll_result* what) {
  fedrt_poll_result r{};
  if (dev == nullptr) {
    r.need = FEDRT_ERROR;
    r.status = FEDRT_EINVAL;
    r.message = "fedrt_poll: no device";
  } else {
    const FwClient::Poll p = dev->client.poll();
    r.wait_ms = p.wait_ms;
    switch (p.need) {
      case FwClient::Need::kRead: r.need = FEDRT_NEED_READ; break;
      case FwClient::Need::kWrite: r.need = FEDRT_NEED_WRITE; break;
      case FwClient::Need::kSample: r.need = FEDRT_NEED_SAMPLE; break;
      case FwClient::Need::kWait: r.need = FEDRT_WAIT; break;
      case FwClient::Need::kDone: r.need = FEDRT_DONE; break;
      case FwClient::Need::kError:
        r.need = FEDRT_ERROR;
        r.status = Code(p.status);
        r.message = p.status.message();
        break;
    }
  }
  if (what != nullptr) *what = r;
  return r.need;
}

int fedrt_feed(fedrt_device* dev, const float* features, uint32_t dim, float label) {
  if (dev == nullptr) return FEDRT_EINVAL;
  const Status st = dev->client.feed(features, dim, label);
  if (st.ok()) return FEDRT_OK;
  dev->last_error = st.message();
  return st.code() == StatusCode::kFailedPrecondition ? FEDRT_ESTATE : Code(st);
}

int fedrt_feed_done(fedrt_device* dev) {
  if (dev == nullptr) return FEDRT_EINVAL;
  return Code(dev->client.feed_done());
}

int fedrt_get_stats(const fedrt_device* dev, fedrt_stats* out) {
  if (dev == nullptr || out == nullptr) return FEDRT_EINVAL;
  const fedrt::fw::ClientStats s = dev->client.stats();
  out->sessions = s.sessions;
  out->rounds = s.rounds;
  out->results = s.results;
  out->rejected_frames = s.rejected_frames;
  out->rejected_records = s.rejected_records;
  out->tls_heap_max_bytes = s.tls_heap_max_bytes;
  out->tls_heap_bytes = s.tls_heap_bytes;
  out->workspace_max_bytes = s.workspace_max_bytes;
  out->workspace_bytes = dev->workspace_bytes;
  return FEDRT_OK;
}

const char* fedrt_last_error(const fedrt_device* dev) { return dev == nullptr ? "" : dev->last_error; }

const char* fedrt_strerror(int status) {
  switch (status) {
    case FEDRT_OK: return "ok";
    case FEDRT_EINVAL: return "invalid argument";
    case FEDRT_ENOMEM: return "not enough memory";
    case FEDRT_ESTATE: return "not allowed in this state";
    case FEDRT_EREFUSED: return "the device refused the task";
    case FEDRT_EDENIED: return "the coordinator refused the device";
    case FEDRT_EUNAVAILABLE: return "no working session with the coordinator";
    case FEDRT_EINTERNAL: return "internal error";
    default: return "unknown status";
  }
}

}  // extern "C"
