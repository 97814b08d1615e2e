#include "fedrt/fw/client.h"

#include <cstring>
#include <new>

#include <mbedtls/hmac_drbg.h>
#include <mbedtls/md.h>
#include <mbedtls/memory_buffer_alloc.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/sha256.h>
#include <mbedtls/ssl.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "fedrt.npb.h"
#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/codec.h"
#include "fedrt/compression/quantizer.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/fw/log_line.h"
#include "fedrt/secagg/device.h"

#ifndef FEDRT_FW_TLS_HEAP_BYTES
#define FEDRT_FW_TLS_HEAP_BYTES 8192  // TLS session (about 3.9 KB) + X25519 bignums of a SecAgg+ phase
#endif

namespace fedrt::fw {

using algorithms::LsaAlgorithm;
using algorithms::LsaClient;
using algorithms::LsaHyper;
using algorithms::RoundPlan;

namespace {

constexpr uint32_t kProtocolVersion = 1;             // net::kProtocolVersion
constexpr size_t kMaxFrame = fedrt_wire_Envelope_size;  // largest Envelope the .options bounds allow
constexpr uint32_t kResyncLimit = 64 * 1024;        // net::kMaxFrameBytes: longer lengths are not skipped
constexpr uint32_t kDrainQuietMs = 500;             // link silent this long after a failed session = drained
constexpr int kDrainMaxRounds = 20;
constexpr size_t kMaxPayload = 8 * kFwMaxDim;  // raw float64 (encoding 0) is the longest payload for d <= kFwMaxDim

alignas(8) unsigned char g_tls_heap[FEDRT_FW_TLS_HEAP_BYTES];

struct AlgSlot {
  bool used = false;
  uint32_t algorithm_index = 0;
  uint32_t run = 0;
  LsaClient<float> client;
  alignas(16) uint8_t mem[3 * sizeof(float) * kFwMaxDim + 2 * Arena::kAlignment];
  bool pending = false;
  uint32_t pending_round = 0;
  uint32_t pending_samples = 0;
  float pending_theta[kFwMaxDim];  // theta_{t,H}^c not yet committed
  // The pending Update's payload (a resubmission sends the same bytes).
  uint32_t encoding = 0;
  size_t payload_len = 0;
  uint8_t payload[kMaxPayload];
  // Compressed uplink (encoding 1, fedrt.proto Update): V_c, and for the
  // pending update theta_t and the decoded message m.
  bool compressed = false;
  bool control_variates = false;
  float alpha = 1.0f;
  float cv_memory[kFwMaxDim];  // V_c, 0 at the start of each (algorithm, run)
  float sent_theta_t[kFwMaxDim];
  float sent_m[kFwMaxDim];
};

// Outcome of one session.
enum class SessionEnd { kShutdown, kRetry, kFatal };

bool Finite(double v) { return v - v == 0.0; }

}  // namespace

struct FwClient::Impl {
  ClientOptions opt;
  mbedtls_ssl_context ssl;
  mbedtls_ssl_config conf;
  mbedtls_hmac_drbg_context drbg;
  uint32_t entropy_counter = 0;
  int index = -1;
  bool welcomed = false;
  AlgSlot algs[kFwMaxAlgorithms];
  // The received frame; once decoded into `in`, its bytes hold a SecAgg+
  // phase's ciphertexts or unmask shares until `out` is encoded into it (RAM).
  alignas(8) uint8_t frame[4 + kMaxFrame];
  fedrt_wire_Envelope in;
  fedrt_wire_Envelope out;
  ClientStats stats;
  Status fatal;
  // Secure aggregation (fedrt.proto "Secure aggregation"): the open SecAgg+
  // round over x_u, the d b-bit fields of the pending rounding payload.
  secagg::SecAggDevice sa;
  bool sa_open = false;
  uint32_t sa_alg = 0, sa_run = 0, sa_round = 0;
  uint32_t sa_x[kFwMaxDim];

  void log(const LogLine& l) {
    if (opt.log != nullptr) opt.log(opt.log_ctx, l.c_str());
  }
  void log_status(const char* what, const Status& s) {
    LogLine l;
    l.add(what).add(": ").add(StatusCodeName(s.code())).add(": ").add(s.message());
    log(l);
  }
  void log_tls(const char* what, int rc) {
    LogLine l;
    l.add(what).add(": mbedtls -0x").add_hex(static_cast<uint32_t>(-rc));
    log(l);
  }

  Status setup_tls();
  SessionEnd session();
  Status handshake();
  Status write_all(const uint8_t* data, size_t n);
  Status send_envelope();
  int read_exact(uint8_t* dst, size_t n);
  void drain_link();
  Status handle(bool& shutdown);
  Status on_welcome(const fedrt_wire_Welcome& w);
  Status on_announce(const fedrt_wire_RoundAnnouncement& a);
  Status on_result(const fedrt_wire_RoundResult& r);
  Status sa_start(const fedrt_wire_RoundAnnouncement& a, const AlgSlot& s);
  Status sa_keys(const fedrt_wire_SecAggKeys& m);
  Status sa_shares_in(const fedrt_wire_SecAggSharesIn& m);
  Status sa_unmask(const fedrt_wire_SecAggUnmaskRequest& m);
  template <class M>
  bool sa_current(const M& m) const {
    return sa_open && m.algorithm_index == sa_alg && m.run == sa_run && m.round == sa_round;
  }
  template <class M>
  void sa_head(M& m) const {
    m.algorithm_index = sa_alg;
    m.run = sa_run;
    m.round = sa_round;
  }
  Status send_update(const AlgSlot& s);
  Status encode_update(const fedrt_wire_RoundAnnouncement& a, const float* theta_t, AlgSlot& s);
  AlgSlot* slot(uint32_t algorithm_index, bool create);
};

namespace {

FwClient::Impl g_impl;

// DRBG entropy: SHA-256(seed || counter) blocks. The boards have no TRNG; the
// seed is provisioned per device (and per launch by the fleet).
int SeedEntropy(void* p, unsigned char* out, size_t len) {
  auto* impl = static_cast<FwClient::Impl*>(p);
  while (len > 0) {
    unsigned char block[32];
    unsigned char ctr[4];
    const uint32_t c = impl->entropy_counter++;
    for (int i = 0; i < 4; ++i) ctr[i] = static_cast<unsigned char>(c >> (8 * i));
    mbedtls_sha256_context sha;
    mbedtls_sha256_init(&sha);
    if (mbedtls_sha256_starts_ret(&sha, 0) != 0 ||
        mbedtls_sha256_update_ret(&sha, impl->opt.identity.entropy_seed, impl->opt.identity.entropy_seed_len) != 0 ||
        mbedtls_sha256_update_ret(&sha, ctr, sizeof ctr) != 0 || mbedtls_sha256_finish_ret(&sha, block) != 0) {
      mbedtls_sha256_free(&sha);
      return -1;
    }
    mbedtls_sha256_free(&sha);
    const size_t k = len < sizeof block ? len : sizeof block;
    std::memcpy(out, block, k);
    out += k;
    len -= k;
  }
  return 0;
}

int LinkSend(void* p, const unsigned char* buf, size_t len) {
  auto* impl = static_cast<FwClient::Impl*>(p);
  const int r = impl->opt.link.write(impl->opt.link.ctx, buf, len);
  if (r > 0) return r;
  if (r == 0) return MBEDTLS_ERR_SSL_WANT_WRITE;
  return MBEDTLS_ERR_NET_SEND_FAILED;
}

int LinkRecvTimeout(void* p, unsigned char* buf, size_t len, uint32_t timeout_ms) {
  auto* impl = static_cast<FwClient::Impl*>(p);
  const int r = impl->opt.link.read(impl->opt.link.ctx, buf, len, timeout_ms == 0 ? 0xFFFFFFFFu : timeout_ms);
  if (r > 0) return r;
  if (r == 0) return MBEDTLS_ERR_SSL_TIMEOUT;
  return MBEDTLS_ERR_NET_CONN_RESET;
}

uint32_t ReadBe32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

Result<LsaAlgorithm> AlgorithmFromName(const char* name) {
  if (std::strcmp(name, "fedlsa") == 0) return LsaAlgorithm::kFedLsa;
  if (std::strcmp(name, "scafflsa") == 0) return LsaAlgorithm::kScaffLsa;
  if (std::strcmp(name, "scafflsa-prob") == 0) return LsaAlgorithm::kScaffLsaProb;
  return Status::InvalidArgument("announcement names an unknown algorithm");
}

// A model vector from the wire: exactly d finite values.
Status ValidateModel(const double* v, pb_size_t count, int dim, float* out) {
  if (count != static_cast<pb_size_t>(dim)) return Status::InvalidArgument("model has the wrong dimension");
  for (int i = 0; i < dim; ++i) {
    if (!Finite(v[i])) return Status::InvalidArgument("model has a NaN or Inf entry");
    out[i] = static_cast<float>(v[i]);
  }
  return Status::Ok();
}

}  // namespace

Status FwClient::Impl::setup_tls() {
  mbedtls_memory_buffer_alloc_init(g_tls_heap, sizeof g_tls_heap);
  mbedtls_ssl_init(&ssl);
  mbedtls_ssl_config_init(&conf);
  mbedtls_hmac_drbg_init(&drbg);
  const auto& id = opt.identity;
  int rc = mbedtls_hmac_drbg_seed(&drbg, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), SeedEntropy, this,
                                  reinterpret_cast<const unsigned char*>(id.device_id), std::strlen(id.device_id));
  if (rc != 0) return Status::Internal("seeding the TLS random generator failed");
  rc = mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                   MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0) return Status::Internal("mbedtls_ssl_config_defaults failed");
  static const int kSuites[] = {MBEDTLS_TLS_PSK_WITH_CHACHA20_POLY1305_SHA256, 0};
  mbedtls_ssl_conf_ciphersuites(&conf, kSuites);
  mbedtls_ssl_conf_min_version(&conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_max_version(&conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_rng(&conf, mbedtls_hmac_drbg_random, &drbg);
  rc = mbedtls_ssl_conf_max_frag_len(&conf, MBEDTLS_SSL_MAX_FRAG_LEN_1024);
  if (rc != 0) return Status::Internal("max_fragment_length not supported");
  rc = mbedtls_ssl_conf_psk(&conf, id.psk, id.psk_len, reinterpret_cast<const unsigned char*>(id.device_id),
                            std::strlen(id.device_id));
  if (rc != 0) return Status::ResourceExhausted("storing the PSK failed (TLS heap too small?)");
  mbedtls_ssl_conf_read_timeout(&conf, opt.handshake_timeout_ms);
  rc = mbedtls_ssl_setup(&ssl, &conf);
  if (rc != 0) return Status::ResourceExhausted("mbedtls_ssl_setup failed (TLS heap too small?)");
  mbedtls_ssl_set_bio(&ssl, this, LinkSend, nullptr, LinkRecvTimeout);
  return Status::Ok();
}

Status FwClient::Impl::write_all(const uint8_t* data, size_t n) {
  while (n > 0) {
    const int rc = mbedtls_ssl_write(&ssl, data, n);
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE || rc == MBEDTLS_ERR_SSL_WANT_READ) continue;
    if (rc < 0) {
      log_tls("write failed", rc);
      return Status(StatusCode::kUnavailable, "TLS write failed");
    }
    data += rc;
    n -= static_cast<size_t>(rc);
  }
  return Status::Ok();
}

Status FwClient::Impl::send_envelope() {
  pb_ostream_t s = pb_ostream_from_buffer(frame + 4, kMaxFrame);
  if (!pb_encode(&s, fedrt_wire_Envelope_fields, &out)) return Status::Internal("encoding a message failed");
  const uint32_t n = static_cast<uint32_t>(s.bytes_written);
  frame[0] = static_cast<uint8_t>(n >> 24);
  frame[1] = static_cast<uint8_t>(n >> 16);
  frame[2] = static_cast<uint8_t>(n >> 8);
  frame[3] = static_cast<uint8_t>(n);
  return write_all(frame, 4 + n);
}

// Reads exactly n plaintext bytes: 0, or the mbedTLS error code.
int FwClient::Impl::read_exact(uint8_t* dst, size_t n) {
  while (n > 0) {
    const int rc = mbedtls_ssl_read(&ssl, dst, n);
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) continue;
    if (rc == 0) return MBEDTLS_ERR_SSL_CONN_EOF;
    if (rc < 0) return rc;
    dst += rc;
    n -= static_cast<size_t>(rc);
  }
  return 0;
}

// After a failed session on a link without reconnect (a UART): drop what is
// still in flight from the old session until the link is quiet.
void FwClient::Impl::drain_link() {
  uint8_t scratch[64];
  for (int i = 0; i < kDrainMaxRounds; ++i) {
    const int r = opt.link.read(opt.link.ctx, scratch, sizeof scratch, kDrainQuietMs);
    if (r <= 0) return;
  }
}

Status FwClient::Impl::handshake() {
  mbedtls_ssl_conf_read_timeout(&conf, opt.handshake_timeout_ms);
  int rc = mbedtls_ssl_session_reset(&ssl);
  if (rc != 0) return Status::Internal("TLS session reset failed");
  while ((rc = mbedtls_ssl_handshake(&ssl)) != 0) {
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) continue;
    log_tls("handshake failed", rc);
    return Status(StatusCode::kUnavailable, "TLS handshake failed");
  }
  mbedtls_ssl_conf_read_timeout(&conf, opt.idle_timeout_ms);
  ++stats.sessions;
  LogLine l;
  l.add("connected suite=").add(mbedtls_ssl_get_ciphersuite(&ssl));
  log(l);
  return Status::Ok();
}

AlgSlot* FwClient::Impl::slot(uint32_t algorithm_index, bool create) {
  for (auto& s : algs)
    if (s.used && s.algorithm_index == algorithm_index) return &s;
  if (!create) return nullptr;
  for (auto& s : algs) {
    if (!s.used) {
      s = AlgSlot{};
      s.used = true;
      s.algorithm_index = algorithm_index;
      return &s;
    }
  }
  return nullptr;
}

Status FwClient::Impl::on_welcome(const fedrt_wire_Welcome& w) {
  if (w.device_index != opt.problem.agent_index) {
    LogLine l;
    l.add("refused: provisioned for agent ").add_u(opt.problem.agent_index).add(" but the coordinator assigned ")
        .add_u(w.device_index);
    log(l);
    return Status(StatusCode::kPermissionDenied, "coordinator assigned another agent index than provisioned");
  }
  index = static_cast<int>(w.device_index);
  welcomed = true;
  LogLine l;
  l.add("registered index=").add_u(w.device_index).add(" devices=").add_u(w.num_devices);
  log(l);
  return Status::Ok();
}

Status FwClient::Impl::send_update(const AlgSlot& s) {
  const int d = opt.problem.dim;
  out = fedrt_wire_Envelope_init_zero;
  out.which_body = fedrt_wire_Envelope_update_tag;
  auto& u = out.body.update;
  u.algorithm_index = s.algorithm_index;
  u.run = s.run;
  u.round = s.pending_round;
  u.encoding = s.encoding;
  u.sample_count = s.pending_samples;
  u.payload.size = static_cast<pb_size_t>(s.payload_len);
  std::memcpy(u.payload.bytes, s.payload, s.payload_len);
  (void)d;
  LogLine l;
  l.add("update alg=").add_u(s.algorithm_index).add(" run=").add_u(s.run).add(" round=").add_u(s.pending_round);
  log(l);
  Status st = send_envelope();
  if (st.ok()) ++stats.rounds;
  return st;
}

// The Update payload of the new theta_{t,H}^c (fedrt.proto, Update): raw
// float64 (encoding 0), or with the announcement's quantizer the codec bytes
// of m = Q(theta_{t,H}^c - theta_t - V_c) drawn from
// CounterRng(seed, run, c, t, kCompression) (encoding 1).
Status FwClient::Impl::encode_update(const fedrt_wire_RoundAnnouncement& a, const float* theta_t, AlgSlot& s) {
  const int d = opt.problem.dim;
  s.compressed = false;
#if defined(fedrt_wire_RoundAnnouncement_quantizer_tag)
  if (a.quantizer != 0) {
    compression::QuantizerSpec q;
    if (a.quantizer > static_cast<uint32_t>(compression::QuantizerKind::kRounding))
      return Status::InvalidArgument("announcement names an unknown quantizer");
    q.kind = static_cast<compression::QuantizerKind>(a.quantizer);
    q.levels = a.levels;
    q.elias_gamma = a.elias_gamma;
    q.bits = a.bits;
    q.clip = a.clip;
    FEDRT_TRY(compression::ValidateSpec(q));
    float v[kFwMaxDim];
    for (int i = 0; i < d; ++i) {
      s.sent_theta_t[i] = theta_t[i];
      v[i] = s.pending_theta[i] - theta_t[i] - s.cv_memory[i];
    }
    CounterRng rng(a.seed, a.run, static_cast<uint64_t>(index), a.round, RngStream::kCompression);
    auto n = compression::Encode<float>(q, v, d, rng, s.payload, sizeof s.payload, s.sent_m);
    if (!n.ok()) return n.status();
    s.payload_len = *n;
    s.encoding = 1;
    s.compressed = true;
    s.control_variates = a.control_variates;
    s.alpha = static_cast<float>(compression::ControlVariateStep(q, d));
    return Status::Ok();
  }
#else
  (void)a;
  (void)theta_t;
#endif
  for (int i = 0; i < d; ++i) {  // raw little-endian float64, d values
    const double v = static_cast<double>(s.pending_theta[i]);
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int k = 0; k < 8; ++k) s.payload[8 * i + k] = static_cast<uint8_t>(bits >> (8 * k));
  }
  s.payload_len = 8 * static_cast<size_t>(d);
  s.encoding = 0;
  return Status::Ok();
}

Status FwClient::Impl::on_announce(const fedrt_wire_RoundAnnouncement& a) {
  const int d = opt.problem.dim;
  float theta[kFwMaxDim];
  FEDRT_TRY(ValidateModel(a.global_model, a.global_model_count, d, theta));
  auto alg = AlgorithmFromName(a.algorithm);
  if (!alg.ok()) return alg.status();
  if (a.local_steps == 0 || !(a.step_size > 0.0) || !Finite(a.step_size) || a.hyper_local_steps == 0 ||
      !(a.comm_prob >= 0.0 && a.comm_prob <= 1.0))
    return Status::InvalidArgument("announcement has bad hyper-parameters");
  AlgSlot* s = slot(a.algorithm_index, true);
  if (s == nullptr) return Status::ResourceExhausted("more algorithms than the firmware keeps state for");
  if (!s->client.dim() || s->run != a.run) {
    if (s->client.dim()) {
      LogLine l;
      l.add("new run alg=").add_u(a.algorithm_index).add(" run=").add_u(a.run).add(": control variate reset");
      log(l);
    }
    LsaHyper<float> hyper;
    hyper.algorithm = *alg;
    hyper.step_size = static_cast<float>(a.step_size);
    hyper.local_steps = a.hyper_local_steps;
    hyper.comm_prob = a.comm_prob;
    Arena arena(s->mem, sizeof s->mem);
    auto cl = LsaClient<float>::create(arena, d, hyper);
    if (!cl.ok()) return cl.status();
    s->client = *cl;
    for (int i = 0; i < d; ++i) s->client.mutable_control_variate()[i] = 0.0f;  // xi_c = 0
    for (int i = 0; i < d; ++i) s->cv_memory[i] = 0.0f;                         // V_c = 0
    s->run = a.run;
    s->pending = false;
  }
  if (s->pending && s->pending_round == a.round) {
    LogLine l;
    l.add("resubmit alg=").add_u(a.algorithm_index).add(" run=").add_u(s->run).add(" round=").add_u(a.round);
    log(l);
    if (a.has_secagg) return sa_start(a, *s);  // fresh keys, same input
    return send_update(*s);
  }
  s->pending = false;
  RoundPlan plan;
  plan.round = a.round;
  plan.local_steps = a.local_steps;
  s->client.begin_round(theta, plan);
  // Same RNG key as fedrt-sim's and fedrt-device's agent c: (seed, run, c, t, local steps).
  CounterRng rng(a.seed, a.run, static_cast<uint64_t>(index), a.round, RngStream::kLocalSteps);
  if (d == 8) s->client.run_local_steps<8>(opt.problem.oracle, rng);
  else s->client.run_local_steps<Eigen::Dynamic>(opt.problem.oracle, rng);
  std::memcpy(s->pending_theta, s->client.update(), sizeof(float) * d);
  FEDRT_TRY(encode_update(a, theta, *s));
  s->pending = true;
  s->pending_round = a.round;
  s->pending_samples = a.local_steps;
  if (a.has_secagg) return sa_start(a, *s);
  return send_update(*s);
}

// Round 0 of SecAgg+: x_u = the d b-bit fields of the rounding payload
// (Update encoding 1, same draws as a plain round), fresh secrets from the
// provisioned-seed HMAC-DRBG, SecAggAdvertise (c_pk, s_pk).
Status FwClient::Impl::sa_start(const fedrt_wire_RoundAnnouncement& a, const AlgSlot& s) {
  sa_open = false;
  const auto& sp = a.secagg;
  if (a.quantizer != static_cast<uint32_t>(compression::QuantizerKind::kRounding) || a.control_variates || !s.compressed)
    return Status::InvalidArgument("secure aggregation announced without the rounding quantizer (or with control variates)");
  secagg::RoundParams p;
  p.round_id = sp.round_id;
  p.graph_seed = sp.graph_seed;
  p.n = sp.n;
  p.k = sp.k;
  p.t = sp.t;
  p.dim = static_cast<uint32_t>(opt.problem.dim);
  p.bits = a.bits;
  FEDRT_TRY(secagg::ValidateParams(p));
  if (sp.id >= p.n) return Status::InvalidArgument("secure aggregation id outside 0..n-1");
  if (p.k > secagg::kMaxNeighbours)  // fedrt.proto: a device that cannot hold k neighbours must not advertise
    return Status::ResourceExhausted("secure aggregation: more neighbours than this firmware holds (16)");
  compression::BitReader r(s.payload, s.payload_len);
  for (int i = 0; i < opt.problem.dim; ++i)
    if (!r.get(p.bits, sa_x[i])) return Status::Internal("secure aggregation: payload shorter than d fields");
  secagg::DeviceEntropy e;
  if (mbedtls_hmac_drbg_random(&drbg, reinterpret_cast<unsigned char*>(&e), sizeof e) != 0)
    return Status::Internal("secure aggregation: HMAC-DRBG failed");
  secagg::Advertise ad;
  Status st = sa.advertise(p, sp.id, e, ad);
  mbedtls_platform_zeroize(&e, sizeof e);
  FEDRT_TRY(st);
  sa_open = true;
  sa_alg = a.algorithm_index;
  sa_run = a.run;
  sa_round = a.round;
  out = fedrt_wire_Envelope_init_zero;
  out.which_body = fedrt_wire_Envelope_secagg_advertise_tag;
  auto& m = out.body.secagg_advertise;
  sa_head(m);
  m.c_pk.size = secagg::kKeyBytes;
  std::memcpy(m.c_pk.bytes, ad.c_pk, secagg::kKeyBytes);
  m.s_pk.size = secagg::kKeyBytes;
  std::memcpy(m.s_pk.bytes, ad.s_pk, secagg::kKeyBytes);
  LogLine l;
  l.add("secagg advertise alg=").add_u(sa_alg).add(" run=").add_u(sa_run).add(" round=").add_u(sa_round)
      .add(" id=").add_u(sp.id).add(" n=").add_u(p.n).add(" k=").add_u(p.k).add(" t=").add_u(p.t);
  log(l);
  return send_envelope();
}

// Round 1: one share ciphertext per advertised neighbour (SecAggDevice::share_keys).
Status FwClient::Impl::sa_keys(const fedrt_wire_SecAggKeys& m) {
  if (!sa_current(m)) return Status::Ok();  // an old round's message
  // `in` is decoded and `out` is written only after share_keys: their bytes are free.
  static_assert(sizeof(secagg::Advertise) * secagg::kMaxNeighbours <= sizeof out, "out too small for the keys");
  static_assert(sizeof(secagg::ShareCiphertext) * secagg::kMaxNeighbours <= sizeof frame, "frame too small");
  auto* ads = reinterpret_cast<secagg::Advertise*>(static_cast<void*>(&out));
  auto* cts = reinterpret_cast<secagg::ShareCiphertext*>(frame);
  for (uint32_t i = 0; i < secagg::kMaxNeighbours; ++i) new (&cts[i]) secagg::ShareCiphertext();
  if (m.peers_count > secagg::kMaxNeighbours) return Status::InvalidArgument("SecAggKeys: more peers than neighbours");
  for (pb_size_t i = 0; i < m.peers_count; ++i) {
    const auto& pk = m.peers[i];
    if (pk.c_pk.size != secagg::kKeyBytes || pk.s_pk.size != secagg::kKeyBytes)
      return Status::InvalidArgument("SecAggKeys: keys must be 32 bytes");
    new (&ads[i]) secagg::Advertise();
    ads[i].id = pk.id;
    std::memcpy(ads[i].c_pk, pk.c_pk.bytes, secagg::kKeyBytes);
    std::memcpy(ads[i].s_pk, pk.s_pk.bytes, secagg::kKeyBytes);
  }
  size_t written = 0;
  Status st = sa.share_keys(ads, m.peers_count, cts, secagg::kMaxNeighbours, written);
  if (!st.ok()) {
    sa_open = false;
    return st;
  }
  out = fedrt_wire_Envelope_init_zero;
  out.which_body = fedrt_wire_Envelope_secagg_shares_tag;
  auto& s = out.body.secagg_shares;
  sa_head(s);
  s.shares_count = static_cast<pb_size_t>(written);
  for (size_t i = 0; i < written; ++i) {
    s.shares[i].peer = cts[i].to;
    s.shares[i].ciphertext.size = secagg::kShareWireBytes;
    secagg::PackShareCiphertext(cts[i], s.shares[i].ciphertext.bytes);
  }
  return send_envelope();
}

// Round 2: y_u = x_u + PRG(b_u) + sum_v +-PRG(s_uv) mod 2^32 (SecAggDevice::masked_input).
Status FwClient::Impl::sa_shares_in(const fedrt_wire_SecAggSharesIn& m) {
  if (!sa_current(m)) return Status::Ok();
  static_assert(sizeof(secagg::ShareCiphertext) * secagg::kMaxNeighbours <= sizeof frame,
                "frame too small for the ciphertexts");
  auto* cts = reinterpret_cast<secagg::ShareCiphertext*>(frame);
  if (m.shares_count > secagg::kMaxNeighbours) return Status::InvalidArgument("SecAggSharesIn: more shares than neighbours");
  for (pb_size_t i = 0; i < m.shares_count; ++i) {
    const auto& w = m.shares[i];
    new (&cts[i]) secagg::ShareCiphertext();
    if (!secagg::UnpackShareCiphertext(w.ciphertext.bytes, w.ciphertext.size, w.peer, sa.id(), cts[i]))
      return Status::InvalidArgument("SecAggSharesIn: ciphertext must be 89 bytes");
  }
  const pb_size_t count = m.shares_count;  // `in` and `out` are distinct: m stays valid
  out = fedrt_wire_Envelope_init_zero;
  out.which_body = fedrt_wire_Envelope_secagg_masked_tag;
  auto& s = out.body.secagg_masked;
  Status st = sa.masked_input(cts, count, sa_x, s.masked);
  if (!st.ok()) {
    sa_open = false;
    return st;
  }
  sa_head(s);
  s.masked_count = static_cast<pb_size_t>(opt.problem.dim);
  FEDRT_TRY(send_envelope());
  ++stats.rounds;  // the masked input is this round's update
  LogLine l;
  l.add("secagg masked alg=").add_u(sa_alg).add(" run=").add_u(sa_run).add(" round=").add_u(sa_round);
  log(l);
  return Status::Ok();
}

// Round 3: our share of b_u and, per neighbour, the share of b_v (v survived)
// or of s_sk_v (v dropped), never both (SecAggDevice::unmask).
Status FwClient::Impl::sa_unmask(const fedrt_wire_SecAggUnmaskRequest& m) {
  if (!sa_current(m)) return Status::Ok();
  static_assert(sizeof(secagg::UnmaskShare) * (secagg::kMaxNeighbours + 1) <= sizeof frame, "frame too small");
  auto* shares = reinterpret_cast<secagg::UnmaskShare*>(frame);
  for (uint32_t i = 0; i < secagg::kMaxNeighbours + 1; ++i) new (&shares[i]) secagg::UnmaskShare();
  size_t written = 0;
  Status st = sa.unmask(m.survivors, m.survivors_count, shares, secagg::kMaxNeighbours + 1, written);
  sa_open = false;  // answered once: the round's secrets are no longer needed
  FEDRT_TRY(st);
  out = fedrt_wire_Envelope_init_zero;
  out.which_body = fedrt_wire_Envelope_secagg_unmask_tag;
  auto& s = out.body.secagg_unmask;
  sa_head(s);
  s.shares_count = static_cast<pb_size_t>(written);
  for (size_t i = 0; i < written; ++i) {
    s.shares[i].about = shares[i].about;
    s.shares[i].kind = static_cast<uint32_t>(shares[i].kind);
    s.shares[i].x = shares[i].x;
    s.shares[i].share.size = secagg::kKeyBytes;
    std::memcpy(s.shares[i].share.bytes, shares[i].share, secagg::kKeyBytes);
  }
  return send_envelope();
}

Status FwClient::Impl::on_result(const fedrt_wire_RoundResult& r) {
  AlgSlot* s = slot(r.algorithm_index, false);
  if (s == nullptr || !s->pending || s->run != r.run || s->pending_round != r.round) return Status::Ok();
  const int d = opt.problem.dim;
  float theta[kFwMaxDim];
  FEDRT_TRY(ValidateModel(r.global_model, r.global_model_count, d, theta));
  if (r.included) {
    RoundPlan plan;
    plan.round = r.round;
    if (s->compressed) {
      // What the coordinator aggregated: theta_hat = theta_t + V_c + m; then V_c += alpha m.
      float theta_hat[kFwMaxDim];
      for (int i = 0; i < d; ++i) {
        theta_hat[i] = s->sent_theta_t[i] + s->cv_memory[i] + s->sent_m[i];
        if (s->control_variates) s->cv_memory[i] += s->alpha * s->sent_m[i];
      }
      s->client.begin_round(theta_hat, plan);
    } else {
      s->client.begin_round(s->pending_theta, plan);  // theta_hat = theta_{t,H}^c
    }
    s->client.apply_global(theta);  // xi_c += coef (theta_{t+1} - theta_hat)
  }
  s->pending = false;
  ++stats.results;
  float norm = 0.0f;
  for (int i = 0; i < d; ++i) norm += s->client.control_variate()[i] * s->client.control_variate()[i];
  LogLine l;
  l.add("committed alg=").add_u(r.algorithm_index).add(" run=").add_u(r.run).add(" round=").add_u(r.round)
      .add(" included=").add(r.included ? "true" : "false").add(" xi_norm_sq=").add_float(norm);
  log(l);
  return Status::Ok();
}

Status FwClient::Impl::handle(bool& shutdown) {
  switch (in.which_body) {
    case fedrt_wire_Envelope_welcome_tag: return on_welcome(in.body.welcome);
    case fedrt_wire_Envelope_announce_tag:
      if (!welcomed) return Status::FailedPrecondition("announcement before Welcome");
      return on_announce(in.body.announce);  // a SecAgg+ round answers with SecAggAdvertise
    case fedrt_wire_Envelope_secagg_keys_tag: return sa_keys(in.body.secagg_keys);
    case fedrt_wire_Envelope_secagg_shares_in_tag: return sa_shares_in(in.body.secagg_shares_in);
    case fedrt_wire_Envelope_secagg_unmask_request_tag: return sa_unmask(in.body.secagg_unmask_request);
    case fedrt_wire_Envelope_result_tag: return on_result(in.body.result);
    case fedrt_wire_Envelope_ack_tag: return Status::Ok();
    case fedrt_wire_Envelope_shutdown_tag: {
      LogLine l;
      l.add("shutdown reason=").add(in.body.shutdown.reason);
      log(l);
      shutdown = true;
      return Status::Ok();
    }
    case fedrt_wire_Envelope_error_tag: {
      const auto r = in.body.error.reason;
      LogLine l;
      l.add("coordinator error reason=").add_u(static_cast<uint32_t>(r)).add(": ").add(in.body.error.message);
      log(l);
      if (r == fedrt_wire_ErrorReason_ERROR_IDENTITY || r == fedrt_wire_ErrorReason_ERROR_CONFIG_MISMATCH ||
          r == fedrt_wire_ErrorReason_ERROR_PROTOCOL_VERSION)
        return Status(StatusCode::kPermissionDenied, "refused by the coordinator");
      return Status::Ok();
    }
    default: return Status::InvalidArgument("message of a kind a device does not accept");
  }
}

SessionEnd FwClient::Impl::session() {
  if (!handshake().ok()) return SessionEnd::kRetry;
  out = fedrt_wire_Envelope_init_zero;
  out.which_body = fedrt_wire_Envelope_hello_tag;
  auto& h = out.body.hello;
  h.protocol_version = kProtocolVersion;
  std::strncpy(h.device_id, opt.identity.device_id, sizeof h.device_id - 1);
  h.config_fingerprint = opt.problem.config_fingerprint;
  for (const auto& s : algs) {
    if (s.used && s.pending) {
      h.has_pending = true;
      h.pending_algorithm = s.algorithm_index;
      h.pending_run = s.run;
      h.pending_round = s.pending_round;
    }
  }
  if (!send_envelope().ok()) return SessionEnd::kRetry;
  for (;;) {
    int rc = read_exact(frame, 4);
    if (rc == 0) {
      const uint32_t len = ReadBe32(frame);
      if (len == 0 || len > kMaxFrame) {
        ++stats.rejected_frames;
        LogLine l;
        l.add("rejected frame: ").add(StatusCodeName(len == 0 ? StatusCode::kInvalidArgument : StatusCode::kOutOfRange))
            .add(": frame of ").add_u(len).add(" bytes, limit ").add_u(kMaxFrame);
        if (len > kResyncLimit) {
          l.add("; starting a new session");
          log(l);
          return SessionEnd::kRetry;
        }
        l.add("; skipped");
        log(l);
        for (uint32_t left = len; left > 0 && rc == 0;) {  // resync: skip the body
          const uint32_t k = left < kMaxFrame ? left : static_cast<uint32_t>(kMaxFrame);
          rc = read_exact(frame, k);
          left -= k;
        }
        if (rc == 0) continue;
      } else {
        rc = read_exact(frame, len);
        if (rc == 0) {
          pb_istream_t is = pb_istream_from_buffer(frame, len);
          in = fedrt_wire_Envelope_init_zero;
          if (!pb_decode(&is, fedrt_wire_Envelope_fields, &in) || in.which_body == 0) {
            ++stats.rejected_frames;
            LogLine l;
            l.add("rejected frame: DATA_LOSS: undecodable message (").add(PB_GET_ERROR(&is)).add("); skipped");
            log(l);
            continue;
          }
          bool shutdown = false;
          Status st = handle(shutdown);
          if (shutdown) return SessionEnd::kShutdown;
          if (!st.ok()) {
            if (st.code() == StatusCode::kPermissionDenied) {  // refused, or provisioned for another agent
              fatal = st;
              log_status("fatal", st);
              return SessionEnd::kFatal;
            }
            if (st.code() == StatusCode::kUnavailable) return SessionEnd::kRetry;
            ++stats.rejected_frames;
            log_status("rejected message", st);
          }
          continue;
        }
      }
    }
    // rc != 0: the session is over.
    if (rc == MBEDTLS_ERR_SSL_INVALID_MAC || rc == MBEDTLS_ERR_SSL_INVALID_RECORD ||
        rc == MBEDTLS_ERR_SSL_BAD_INPUT_DATA) {
      ++stats.rejected_records;
      log_tls("rejected TLS record: DATA_LOSS", rc);
    } else if (rc == MBEDTLS_ERR_SSL_TIMEOUT) {
      log(LogLine().add("coordinator silent for too long: new session"));
    } else if (rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || rc == MBEDTLS_ERR_SSL_CONN_EOF) {
      log(LogLine().add("coordinator closed the session"));
    } else {
      log_tls("session failed", rc);
    }
    return SessionEnd::kRetry;
  }
}

Status FwClient::init(const ClientOptions& options) {
  if (impl_ != nullptr) return Status::FailedPrecondition("fw client: already initialised");
  const auto& id = options.identity;
  if (id.device_id == nullptr || std::strlen(id.device_id) == 0 || std::strlen(id.device_id) > 63)
    return Status::InvalidArgument("fw client: device id must have 1..63 characters");
  if (id.psk == nullptr || id.psk_len < 16 || id.psk_len > 64)
    return Status::InvalidArgument("fw client: PSK must have 16..64 bytes");
  if (id.entropy_seed == nullptr || id.entropy_seed_len < 32)
    return Status::InvalidArgument("fw client: entropy seed must have at least 32 bytes");
  if (options.link.read == nullptr || options.link.write == nullptr)
    return Status::InvalidArgument("fw client: link has no read/write");
  if (options.problem.dim <= 0 || options.problem.dim > kFwMaxDim)
    return Status::InvalidArgument("fw client: problem not provisioned");
  impl_ = &g_impl;
  impl_->opt = options;
  return impl_->setup_tls();
}

Status FwClient::run() {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  Impl& m = *impl_;
  uint32_t failed = 0;
  for (;;) {
    const uint32_t sessions_before = m.stats.sessions;
    m.welcomed = false;
    const SessionEnd end = m.session();
    mbedtls_ssl_close_notify(&m.ssl);  // best effort
    if (end == SessionEnd::kShutdown) return Status::Ok();
    if (end == SessionEnd::kFatal) return m.fatal;
    failed = (m.stats.sessions > sessions_before && m.welcomed) ? 0 : failed + 1;
    if (failed >= m.opt.max_failed_sessions)
      return Status(StatusCode::kUnavailable, "no working session with the coordinator");
    if (m.opt.link.reconnect != nullptr) {
      if (m.opt.link.reconnect(m.opt.link.ctx) != 0) m.log(LogLine().add("reconnect failed; retrying"));
    } else {
      m.drain_link();
    }
    m.log(LogLine().add("new session"));
  }
}

ClientStats FwClient::stats() const {
  ClientStats s;
  if (impl_ == nullptr) return s;
  s = impl_->stats;
  size_t max_used = 0, max_blocks = 0;
  mbedtls_memory_buffer_alloc_max_get(&max_used, &max_blocks);
  s.tls_heap_max_bytes = max_used;
  s.tls_heap_bytes = sizeof g_tls_heap;
  return s;
}

}  // namespace fedrt::fw
