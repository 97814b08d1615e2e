// nanopb mapping of fedrt.proto (see fedrt/fw/nanopb_codec.h); the field-by-field
// twin of runtime/src/wire/protobuf_codec.cc. The task's semantic checks are
// task/check.h's, shared with the host's codec.
#include "fedrt/fw/nanopb_codec.h"

#include <cstring>
#include <new>

#include "fedrt/compression/quantizer.h"
#include "fedrt/protocol/message_check.h"
#include "fedrt/task/check.h"

namespace fedrt::fw {

using protocol::MessageKind;
using protocol::View;

namespace {


template <class T, size_t N>
constexpr uint32_t Cap(const T (&)[N]) {
  return static_cast<uint32_t>(N);
}
#define FEDRT_FW_COUNT(Message, field) \
  static_cast<uint32_t>(sizeof(Message::field) / sizeof(Message::field[0]))

template <class M>
void Head(const protocol::RoundId& id, M& m) {
  m.algorithm_index = id.algorithm;
  m.run = id.run;
  m.round = id.round;
}
template <class M>
protocol::RoundId IdOf(const M& m) {
  return protocol::RoundId{m.algorithm_index, m.run, m.round};
}

// A 32-byte key of a nanopb bytes field.
template <class B>
bool Key(const B& in, uint8_t* out) {
  if (in.size != secagg::kKeyBytes) return false;
  std::memcpy(out, in.bytes, secagg::kKeyBytes);
  return true;
}
template <class B>
void PutKey(const uint8_t* key, B& out) {
  static_assert(sizeof(out.bytes) >= secagg::kKeyBytes, "key field too small");
  out.size = static_cast<pb_size_t>(secagg::kKeyBytes);
  std::memcpy(out.bytes, key, secagg::kKeyBytes);
}

// nanopb's init_zero of a message without default values is all zero bytes.
void Clear(fedrt_wire_Envelope& env, pb_size_t tag) {
  std::memset(static_cast<void*>(&env), 0, sizeof env);
  env.which_body = tag;
}

}  // namespace

// ---------------------------------------------------------------- task

Status DecodeTask(const fedrt_wire_Task& in, task::Task& t) {
  auto bad = [](const char* m) { return Status::InvalidArgument(m); };
  t = task::Task{};
  const fedrt_wire_ProblemSpec& wp = in.problem;
  if (wp.kind > static_cast<uint32_t>(task::ProblemKind::kUser)) return bad("task: unknown problem kind");
  task::ProblemSpec& p = t.problem;
  p.kind = static_cast<task::ProblemKind>(wp.kind);
  p.agents = wp.agents;
  p.dim = wp.dim;
  p.seed = wp.seed;
  p.from_files = wp.from_files;
  p.data_fingerprint = wp.data_fingerprint;
  p.own_data = wp.own_data;
  if (wp.data_format > 1) return bad("task: unknown data format");
  p.data_format = static_cast<uint8_t>(wp.data_format);
  static_assert(sizeof wp.label == sizeof p.label, "nanopb label bound = task::kMaxLabelChars + 1");
  std::memcpy(p.label, wp.label, sizeof p.label);
  p.label[sizeof p.label - 1] = '\0';
  p.classes = wp.classes;
  p.intercept = wp.intercept;
  const fedrt_wire_GarnetSpec& g = wp.garnet;
  p.garnet.states = g.states;
  p.garnet.actions = g.actions;
  p.garnet.branching = g.branching;
  p.garnet.gamma = g.gamma;
  p.garnet.epsilon = g.epsilon;
  if (g.heterogeneity > 1) return bad("task: unknown heterogeneity");
  p.garnet.heterogeneity = static_cast<task::Heterogeneity>(g.heterogeneity);
  p.garnet.noise_free = g.noise_free;
  const fedrt_wire_SyntheticSpec& s = wp.synthetic;
  p.synthetic.samples = s.samples;
  p.synthetic.covariate_shift = s.covariate_shift;
  p.synthetic.concept_shift = s.concept_shift;
  p.synthetic.quantity_skew = s.quantity_skew;
  p.synthetic.noise = s.noise;
  p.synthetic.l2 = s.l2;
  const fedrt_wire_GmmSpec& m = wp.gmm;
  p.gmm.components = m.components;
  p.gmm.data_dim = m.data_dim;
  p.gmm.points = m.points;
  p.gmm.own_weight = m.own_weight;
  p.gmm.separation = m.separation;
  if (in.algorithms_count > task::kMaxAlgorithms) return bad("task: algorithms outside 1..kMaxAlgorithms (8)");
  t.num_algorithms = in.algorithms_count;
  for (uint32_t a = 0; a < t.num_algorithms; ++a) {
    const fedrt_wire_AlgorithmChoice& c = in.algorithms[a];
    if (c.kind > static_cast<uint32_t>(task::AlgorithmKind::kVrFedEm)) return bad("task: unknown algorithm");
    t.algorithms[a] = task::AlgorithmChoice{static_cast<task::AlgorithmKind>(c.kind), c.rr};
  }
  const fedrt_wire_HyperSpec& h = in.hyper;
  t.hyper.step = h.step;
  t.hyper.local_steps = h.local_steps;
  t.hyper.comm_prob = h.comm_prob;
  t.hyper.batch = h.batch;
  t.hyper.prox_mu = h.prox_mu;
  t.hyper.server_step = h.server_step;
  t.hyper.burn_in = h.burn_in;
  t.hyper.em_step = h.em_step;
  t.hyper.inner_iters = h.inner_iters;
  const fedrt_wire_CompressionSpec& c = in.compression;
  if (c.quantizer > static_cast<uint32_t>(compression::QuantizerKind::kRounding)) return bad("task: unknown quantizer");
  t.compression.quantizer.kind = static_cast<compression::QuantizerKind>(c.quantizer);
  t.compression.quantizer.levels = c.levels;
  t.compression.quantizer.elias_gamma = c.elias_gamma;
  t.compression.quantizer.bits = c.bits;
  t.compression.quantizer.clip = c.clip;
  t.compression.control_variates = c.control_variates;
  t.compression.downlink = c.downlink;
  t.secagg.enabled = in.secagg.enabled;
  t.secagg.neighbours = in.secagg.neighbours;
  t.participation = in.participation;
  t.seed = in.seed;
  t.rounds = in.rounds;
  t.runs = in.runs;
#ifdef fedrt_wire_Task_privacy_tag  // absent from images whose options ignore it (fedrt_fw_lsa.options)
  t.privacy.enabled = in.has_privacy && in.privacy.enabled;
  if (t.privacy.enabled) {
    t.privacy.clip = in.privacy.clip;
    t.privacy.noise_multiplier = in.privacy.noise_multiplier;
    t.privacy.distributed = in.privacy.distributed;
    if (t.privacy.distributed) {
      t.privacy.has_test_seed = in.privacy.has_test_seed;
      t.privacy.device_variance = in.privacy.device_variance;
      t.privacy.quorum_ppm = in.privacy.quorum_ppm;
      t.privacy.test_seed = in.privacy.test_seed;
    }
  }
#endif
  if (const char* why = task::Invalid(t)) return bad(why);
  return Status::Ok();
}

// ---------------------------------------------------------------- device -> coordinator

uint32_t MaxModelDim() { return FEDRT_FW_COUNT(fedrt_wire_RoundResult, model); }
uint32_t MaxBroadcastScalars() { return FEDRT_FW_COUNT(fedrt_wire_RoundAnnouncement, model); }
uint32_t MaxUpdateSegments() { return FEDRT_FW_COUNT(fedrt_wire_Update, payload); }
uint32_t MaxSegmentBytes() { return static_cast<uint32_t>(sizeof(fedrt_wire_Update_payload_t::bytes)); }
uint32_t MaxMaskedScalars() { return FEDRT_FW_COUNT(fedrt_wire_SecAggMasked, masked); }
uint32_t MaxChunkData() { return static_cast<uint32_t>(sizeof(fedrt_wire_Chunk_data_t::bytes)); }

// A report is sent when it says something (a loss or a duration), as the hosts' codec does.
template <class M>
void PutReport(const protocol::WorkReport& r, M& m) {
  if (r.loss_before != r.loss_before && r.loss_after != r.loss_after && r.duration_ms == 0 && r.examples == 0) return;
  m.has_report = true;
  m.report.loss_before = r.loss_before;
  m.report.loss_after = r.loss_after;
  m.report.duration_ms = r.duration_ms;
  m.report.examples = r.examples;
}

Status Encode(const protocol::Update& m, fedrt_wire_Envelope& env) {
  Clear(env, fedrt_wire_Envelope_update_tag);
  fedrt_wire_Update& u = env.body.update;
  Head(m.id, u);
  u.encoding = static_cast<uint32_t>(m.encoding);
  u.sample_count = m.sample_count;
#ifdef fedrt_wire_Update_clip_indicator_tag  // absent from fedrt-fw-lsa (fedrt_fw_lsa.options)
  u.clip_indicator = m.clip_indicator;
#endif
  PutReport(m.report, u);
  if (m.chunked) {
    if (m.segments == 0 || m.segments > Cap(u.payload_bytes)) return Status::InvalidArgument("update: 1..2 segments");
    u.payload_bytes_count = static_cast<pb_size_t>(m.segments);
    for (uint32_t k = 0; k < m.segments; ++k) u.payload_bytes[k] = m.payload_bytes[k];
    return Status::Ok();
  }
  if (m.segments > Cap(u.payload)) return Status::ResourceExhausted("update: more segments than this image sends");
  u.payload_count = static_cast<pb_size_t>(m.segments);
  for (uint32_t k = 0; k < m.segments; ++k) {
    if (m.payload[k].size > sizeof(u.payload[k].bytes))
      return Status::ResourceExhausted("update: a segment longer than this image sends");
    u.payload[k].size = static_cast<pb_size_t>(m.payload[k].size);
    std::memcpy(u.payload[k].bytes, m.payload[k].data, m.payload[k].size);
  }
  return Status::Ok();
}

Status Encode(const protocol::Chunk& m, fedrt_wire_Envelope& env) {
  Clear(env, fedrt_wire_Envelope_chunk_tag);
  fedrt_wire_Chunk& c = env.body.chunk;
  Head(m.id, c);
  if (m.data.size == 0 || m.data.size > sizeof(c.data.bytes))
    return Status::ResourceExhausted("chunk: data longer than this image sends");
  c.segment = m.segment;
  c.offset = m.offset;
  c.total = m.total;
  c.data.size = static_cast<pb_size_t>(m.data.size);
  std::memcpy(c.data.bytes, m.data.data, m.data.size);
  return Status::Ok();
}

Status Encode(const protocol::SecAggAdvertiseMsg& m, fedrt_wire_Envelope& env) {
  Clear(env, fedrt_wire_Envelope_secagg_advertise_tag);
  fedrt_wire_SecAggAdvertise& a = env.body.secagg_advertise;
  Head(m.id, a);
  PutKey(m.keys.c_pk, a.c_pk);
  PutKey(m.keys.s_pk, a.s_pk);
  return Status::Ok();
}

Status Encode(const protocol::SecAggSharesMsg& m, fedrt_wire_Envelope& env) {
  Clear(env, fedrt_wire_Envelope_secagg_shares_tag);
  fedrt_wire_SecAggShares& s = env.body.secagg_shares;
  Head(m.id, s);
  if (m.shares.size > Cap(s.shares)) return Status::ResourceExhausted("SecAggShares: more ciphertexts than this image sends");
  s.shares_count = static_cast<pb_size_t>(m.shares.size);
  for (uint32_t i = 0; i < m.shares.size; ++i) {
    static_assert(sizeof(s.shares[i].ciphertext.bytes) >= secagg::kShareWireBytes, "ciphertext field too small");
    s.shares[i].peer = m.shares[i].to;
    s.shares[i].ciphertext.size = static_cast<pb_size_t>(secagg::kShareWireBytes);
    secagg::PackShareCiphertext(m.shares[i], s.shares[i].ciphertext.bytes);
  }
  return Status::Ok();
}

Status Encode(const protocol::SecAggMaskedMsg& m, fedrt_wire_Envelope& env) {
  Clear(env, fedrt_wire_Envelope_secagg_masked_tag);
  fedrt_wire_SecAggMasked& s = env.body.secagg_masked;
  Head(m.id, s);
  if (m.masked.size > Cap(s.masked)) return Status::ResourceExhausted("SecAggMasked: longer than this image sends");
  s.masked_count = static_cast<pb_size_t>(m.masked.size);
  std::memcpy(s.masked, m.masked.data, sizeof(uint32_t) * m.masked.size);
  PutReport(m.report, s);
  return Status::Ok();
}

Status Encode(const protocol::SecAggCheckMsg& m, fedrt_wire_Envelope& env) {
  Clear(env, fedrt_wire_Envelope_secagg_check_tag);
  fedrt_wire_SecAggCheck& s = env.body.secagg_check;
  Head(m.id, s);
  if (m.tags.size > Cap(s.tags)) return Status::ResourceExhausted("SecAggCheck: too many tags");
  s.tags_count = static_cast<pb_size_t>(m.tags.size);
  for (uint32_t i = 0; i < m.tags.size; ++i) {
    static_assert(sizeof(s.tags[i].tag.bytes) >= secagg::kTagBytes, "tag field too small");
    s.tags[i].peer = m.tags[i].to;
    s.tags[i].tag.size = static_cast<pb_size_t>(secagg::kTagBytes);
    std::memcpy(s.tags[i].tag.bytes, m.tags[i].tag, secagg::kTagBytes);
  }
  return Status::Ok();
}

Status Encode(const protocol::SecAggUnmaskMsg& m, fedrt_wire_Envelope& env) {
  Clear(env, fedrt_wire_Envelope_secagg_unmask_tag);
  fedrt_wire_SecAggUnmask& s = env.body.secagg_unmask;
  Head(m.id, s);
  if (m.shares.size > Cap(s.shares)) return Status::ResourceExhausted("SecAggUnmask: more shares than this image sends");
  s.shares_count = static_cast<pb_size_t>(m.shares.size);
  for (uint32_t i = 0; i < m.shares.size; ++i) {
    s.shares[i].about = m.shares[i].about;
    s.shares[i].kind = static_cast<uint32_t>(m.shares[i].kind);
    s.shares[i].x = m.shares[i].x;
    PutKey(m.shares[i].share, s.shares[i].share);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- coordinator -> device

Status Encode(const protocol::ClientMessage& m, fedrt_wire_Envelope& env) {
  switch (m.kind) {
    case MessageKind::kUpdate: return Encode(m.update, env);
    case MessageKind::kChunk: return Encode(m.chunk, env);
    case MessageKind::kSecAggAdvertise: return Encode(m.advertise, env);
    case MessageKind::kSecAggShares: return Encode(m.shares, env);
    case MessageKind::kSecAggMasked: return Encode(m.masked, env);
    case MessageKind::kSecAggCheck: return Encode(m.check, env);
    case MessageKind::kSecAggUnmask: return Encode(m.unmask, env);
    default: return Status::Internal("unexpected session output");
  }
}

// The fields, then the protocol's checks of the message (protocol/message_check.h).
Status Inbound::decode(const fedrt_wire_Envelope& env, void* scratch, size_t scratch_bytes) {
  m_.kind = MessageKind::kNone;
  const bool room = scratch != nullptr && scratch_bytes >= kScratchBytes && (reinterpret_cast<uintptr_t>(scratch) & 7u) == 0;
  switch (env.which_body) {
    case fedrt_wire_Envelope_announce_tag: {
      const fedrt_wire_RoundAnnouncement& a = env.body.announce;
      if (a.kind > static_cast<uint32_t>(protocol::WorkKind::kInitialStatistic))
        return Status::InvalidArgument("announcement of unknown kind");
      if (a.has_delta) return Status::InvalidArgument("a model delta: this image takes the broadcast whole");
      if (a.model_count > MaxBroadcastScalars()) return Status::OutOfRange("broadcast longer than this image's bound");
      if (a.resume_bytes_count != 0 && a.resume_bytes_count != task::kMaxSegments)
        return Status::InvalidArgument("an announcement whose resume offsets are not one per segment");
      m_.announcement = protocol::Announcement{};
      m_.announcement.id = IdOf(a);
      m_.announcement.kind = static_cast<protocol::WorkKind>(a.kind);
      m_.announcement.local_steps = a.local_steps;
      m_.announcement.report = a.report;
      m_.announcement.deadline_ms = a.deadline_ms;
      m_.announcement.model = View<double>{a.model, a.model_count};
      m_.announcement.model_version = a.model_version;
      m_.announcement.model_bytes = a.model_bytes;
      m_.announcement.resume = a.resume_bytes_count > 0;
      for (pb_size_t k = 0; k < a.resume_bytes_count; ++k) m_.announcement.resume_bytes[k] = a.resume_bytes[k];
#ifdef fedrt_wire_RoundAnnouncement_clip_tag  // absent from fedrt-fw-lsa (fedrt_fw_lsa.options)
      if (!(a.clip >= 0 && a.clip - a.clip == 0)) return Status::InvalidArgument("announcement: clip not finite and >= 0");
      m_.announcement.clip = a.clip;
#endif
#ifdef fedrt_wire_RoundAnnouncement_weight_tag  // asynchronous SecAgg+ (docs/async.md)
      if (!(a.weight >= 0 && a.weight <= 1)) return Status::InvalidArgument("announcement: staleness weight outside [0, 1]");
      m_.announcement.weight = a.weight;
#endif
      if (a.has_secagg) {
        const fedrt_wire_SecAggParams& p = a.secagg;
        m_.announcement.secagg = protocol::SecAggRound{true, p.round_id, p.graph_seed, p.n, p.k, p.t, p.id};
      }
      m_.kind = MessageKind::kAnnouncement;
      break;
    }
    case fedrt_wire_Envelope_chunk_tag: {
      const fedrt_wire_Chunk& c = env.body.chunk;
      m_.chunk = protocol::Chunk{IdOf(c), c.segment, c.offset, c.total, View<uint8_t>{c.data.bytes, c.data.size}};
      m_.kind = MessageKind::kChunk;
      break;
    }
    case fedrt_wire_Envelope_result_tag: {
      const fedrt_wire_RoundResult& r = env.body.result;
      if (r.model_count > MaxModelDim()) return Status::OutOfRange("round result model longer than this image's bound");
      m_.result = protocol::RoundResult{IdOf(r), r.included, View<double>{r.model, r.model_count}};
      m_.kind = MessageKind::kRoundResult;
      break;
    }
    case fedrt_wire_Envelope_secagg_keys_tag: {
      const fedrt_wire_SecAggKeys& k = env.body.secagg_keys;
      if (k.peers_count > secagg::kMaxNeighbours) return Status::InvalidArgument("a SecAgg+ list longer than the scratch holds");
      if (!room) return Status::Internal("SecAggKeys: no scratch memory");
      auto* ads = static_cast<secagg::Advertise*>(scratch);
      for (pb_size_t i = 0; i < k.peers_count; ++i) {
        new (&ads[i]) secagg::Advertise();
        ads[i].id = k.peers[i].id;
        if (!Key(k.peers[i].c_pk, ads[i].c_pk) || !Key(k.peers[i].s_pk, ads[i].s_pk))
          return Status::InvalidArgument("SecAggKeys: keys must be 32 bytes");
      }
      m_.keys = protocol::SecAggKeysMsg{IdOf(k), View<secagg::Advertise>{ads, k.peers_count}};
      m_.kind = MessageKind::kSecAggKeys;
      break;
    }
    case fedrt_wire_Envelope_secagg_shares_in_tag: {
      const fedrt_wire_SecAggSharesIn& s = env.body.secagg_shares_in;
      if (s.shares_count > secagg::kMaxNeighbours) return Status::InvalidArgument("a SecAgg+ list longer than the scratch holds");
      if (!room) return Status::Internal("SecAggSharesIn: no scratch memory");
      auto* cts = static_cast<secagg::ShareCiphertext*>(scratch);
      for (pb_size_t i = 0; i < s.shares_count; ++i) {
        new (&cts[i]) secagg::ShareCiphertext();
        // The peer is the sender; the session fills in this device as the recipient.
        if (!secagg::UnpackShareCiphertext(s.shares[i].ciphertext.bytes, s.shares[i].ciphertext.size, s.shares[i].peer,
                                           0, cts[i]))
          return Status::InvalidArgument("SecAggSharesIn: a ciphertext must be 89 bytes");
      }
      m_.shares = protocol::SecAggSharesMsg{IdOf(s), View<secagg::ShareCiphertext>{cts, s.shares_count}};
      m_.kind = MessageKind::kSecAggSharesIn;
      break;
    }
    case fedrt_wire_Envelope_secagg_unmask_request_tag: {
      const fedrt_wire_SecAggUnmaskRequest& r = env.body.secagg_unmask_request;
      m_.unmask_request = protocol::SecAggUnmaskRequestMsg{IdOf(r), View<uint32_t>{r.survivors, r.survivors_count}};
      m_.kind = MessageKind::kSecAggUnmaskRequest;
      break;
    }
    case fedrt_wire_Envelope_secagg_checks_tag: {
      const fedrt_wire_SecAggChecks& c = env.body.secagg_checks;
      if (c.tags_count > secagg::kMaxNeighbours) return Status::InvalidArgument("a SecAgg+ list longer than the scratch holds");
      if (!room) return Status::Internal("SecAggChecks: no scratch");
      auto* tags = static_cast<secagg::ConsistencyTag*>(scratch);
      for (pb_size_t i = 0; i < c.tags_count; ++i) {
        new (&tags[i]) secagg::ConsistencyTag();
        if (c.tags[i].tag.size != secagg::kTagBytes) return Status::InvalidArgument("SecAggChecks: tag not 16 B");
        tags[i].from = c.tags[i].peer;  // the session fills in this device as the recipient
        std::memcpy(tags[i].tag, c.tags[i].tag.bytes, secagg::kTagBytes);
      }
      m_.checks = protocol::SecAggCheckMsg{IdOf(c), View<secagg::ConsistencyTag>{tags, c.tags_count}};
      m_.kind = MessageKind::kSecAggChecks;
      break;
    }
    default: return Status::InvalidArgument("not a round message a device takes");
  }
  if (const protocol::MessageFault f = protocol::Check(m_)) {
    m_.kind = MessageKind::kNone;
    return Status::InvalidArgument(f.why);
  }
  return Status::Ok();
}

}  // namespace fedrt::fw
