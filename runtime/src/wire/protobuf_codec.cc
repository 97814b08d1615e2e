#include "fedrt/wire/protobuf_codec.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/compression/quantizer.h"
#include "fedrt/task/check.h"

namespace fedrt::wire {

using protocol::MessageKind;
using protocol::View;

namespace {

template <class M>
void Head(const protocol::RoundId& id, M* m) {
  m->set_algorithm_index(id.algorithm);
  m->set_run(id.run);
  m->set_round(id.round);
}
std::string Bytes(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

// A report is sent when it says something (a loss or a duration).
template <class M>
void EncodeReport(const protocol::WorkReport& r, M* m) {
  if (std::isnan(r.loss_before) && std::isnan(r.loss_after) && r.duration_ms == 0 && r.examples == 0) return;
  WorkReport* w = m->mutable_report();
  w->set_loss_before(r.loss_before);
  w->set_loss_after(r.loss_after);
  w->set_duration_ms(r.duration_ms);
  w->set_examples(r.examples);
}

}  // namespace

ErrorReason ErrorReasonOf(protocol::Refusal r) {
  switch (r) {
    case protocol::Refusal::kStaleRound: return ERROR_STALE_ROUND;
    case protocol::Refusal::kFutureRound: return ERROR_FUTURE_ROUND;
    case protocol::Refusal::kDuplicate: return ERROR_DUPLICATE;
    case protocol::Refusal::kNotSampled: return ERROR_NOT_SAMPLED;
    case protocol::Refusal::kDimension: return ERROR_DIMENSION;
    case protocol::Refusal::kNonFinite: return ERROR_NON_FINITE;
    case protocol::Refusal::kChunk: return ERROR_CHUNK;
    default: return ERROR_MALFORMED;
  }
}

// ---------------------------------------------------------------- task

void EncodeTask(const task::Task& t, Task* out) {
  const task::ProblemSpec& p = t.problem;
  ProblemSpec* wp = out->mutable_problem();
  wp->set_kind(static_cast<uint32_t>(p.kind));
  wp->set_agents(p.agents);
  wp->set_dim(p.dim);
  wp->set_seed(p.seed);
  wp->set_from_files(p.from_files);
  wp->set_data_fingerprint(p.data_fingerprint);
  wp->set_own_data(p.own_data);
  wp->set_data_format(p.data_format);
  wp->set_label(p.label);
  wp->set_classes(p.classes);
  wp->set_intercept(p.intercept);
  GarnetSpec* g = wp->mutable_garnet();
  g->set_states(p.garnet.states);
  g->set_actions(p.garnet.actions);
  g->set_branching(p.garnet.branching);
  g->set_gamma(p.garnet.gamma);
  g->set_epsilon(p.garnet.epsilon);
  g->set_heterogeneity(static_cast<uint32_t>(p.garnet.heterogeneity));
  g->set_noise_free(p.garnet.noise_free);
  SyntheticSpec* s = wp->mutable_synthetic();
  s->set_samples(p.synthetic.samples);
  s->set_covariate_shift(p.synthetic.covariate_shift);
  s->set_concept_shift(p.synthetic.concept_shift);
  s->set_quantity_skew(p.synthetic.quantity_skew);
  s->set_noise(p.synthetic.noise);
  s->set_l2(p.synthetic.l2);
  GmmSpec* m = wp->mutable_gmm();
  m->set_components(p.gmm.components);
  m->set_data_dim(p.gmm.data_dim);
  m->set_points(p.gmm.points);
  m->set_own_weight(p.gmm.own_weight);
  m->set_separation(p.gmm.separation);
  for (uint32_t a = 0; a < t.num_algorithms; ++a) {
    AlgorithmChoice* c = out->add_algorithms();
    c->set_kind(static_cast<uint32_t>(t.algorithms[a].kind));
    c->set_rr(t.algorithms[a].rr);
  }
  HyperSpec* h = out->mutable_hyper();
  h->set_step(t.hyper.step);
  h->set_local_steps(t.hyper.local_steps);
  h->set_comm_prob(t.hyper.comm_prob);
  h->set_batch(t.hyper.batch);
  h->set_prox_mu(t.hyper.prox_mu);
  h->set_server_step(t.hyper.server_step);
  h->set_burn_in(t.hyper.burn_in);
  h->set_em_step(t.hyper.em_step);
  h->set_inner_iters(t.hyper.inner_iters);
  CompressionSpec* c = out->mutable_compression();
  c->set_quantizer(static_cast<uint32_t>(t.compression.quantizer.kind));
  c->set_levels(t.compression.quantizer.levels);
  c->set_elias_gamma(t.compression.quantizer.elias_gamma);
  c->set_bits(t.compression.quantizer.bits);
  c->set_clip(t.compression.quantizer.clip);
  c->set_control_variates(t.compression.control_variates);
  c->set_downlink(t.compression.downlink);
  out->mutable_secagg()->set_enabled(t.secagg.enabled);
  out->mutable_secagg()->set_neighbours(t.secagg.neighbours);
  out->set_participation(t.participation);
  out->set_seed(t.seed);
  out->set_rounds(t.rounds);
  out->set_runs(t.runs);
  if (t.privacy.enabled) {  // absent otherwise: a task without privacy keeps its bytes
    PrivacySpec* p = out->mutable_privacy();
    p->set_enabled(true);
    p->set_clip(t.privacy.clip);
    p->set_noise_multiplier(t.privacy.noise_multiplier);
    if (t.privacy.distributed) {  // absent otherwise: a central task keeps its bytes
      p->set_distributed(true);
      p->set_has_test_seed(t.privacy.has_test_seed);
      p->set_device_variance(t.privacy.device_variance);
      p->set_quorum_ppm(t.privacy.quorum_ppm);
      p->set_test_seed(t.privacy.test_seed);
    }
  }
}

Status DecodeTask(const Task& in, task::Task& t) {
  auto bad = [](const std::string& m) { return Status(StatusCode::kInvalidArgument, "task: " + m); };
  t = task::Task{};
  const ProblemSpec& wp = in.problem();
  if (wp.kind() > static_cast<uint32_t>(task::ProblemKind::kUser)) return bad(fmt::format("unknown problem kind {}", wp.kind()));
  task::ProblemSpec& p = t.problem;
  p.kind = static_cast<task::ProblemKind>(wp.kind());
  p.agents = wp.agents();
  p.dim = wp.dim();
  p.seed = wp.seed();
  p.from_files = wp.from_files();
  p.data_fingerprint = wp.data_fingerprint();
  p.own_data = wp.own_data();
  if (wp.data_format() > 1) return bad(fmt::format("unknown data format {}", wp.data_format()));
  p.data_format = static_cast<uint8_t>(wp.data_format());
  if (wp.label().size() > task::kMaxLabelChars || wp.label().find('\0') != std::string::npos)
    return bad(fmt::format("label column name of {} bytes (at most {})", wp.label().size(), task::kMaxLabelChars));
  std::memcpy(p.label, wp.label().c_str(), wp.label().size() + 1);
  p.classes = wp.classes();
  p.intercept = wp.intercept();
  const GarnetSpec& g = wp.garnet();
  p.garnet.states = g.states();
  p.garnet.actions = g.actions();
  p.garnet.branching = g.branching();
  p.garnet.gamma = g.gamma();
  p.garnet.epsilon = g.epsilon();
  if (g.heterogeneity() > 1) return bad("unknown heterogeneity");
  p.garnet.heterogeneity = static_cast<task::Heterogeneity>(g.heterogeneity());
  p.garnet.noise_free = g.noise_free();
  const SyntheticSpec& s = wp.synthetic();
  p.synthetic.samples = s.samples();
  p.synthetic.covariate_shift = s.covariate_shift();
  p.synthetic.concept_shift = s.concept_shift();
  p.synthetic.quantity_skew = s.quantity_skew();
  p.synthetic.noise = s.noise();
  p.synthetic.l2 = s.l2();
  const GmmSpec& m = wp.gmm();
  p.gmm.components = m.components();
  p.gmm.data_dim = m.data_dim();
  p.gmm.points = m.points();
  p.gmm.own_weight = m.own_weight();
  p.gmm.separation = m.separation();
  if (in.algorithms_size() > static_cast<int>(task::kMaxAlgorithms))
    return bad(fmt::format("{} algorithms (1..{})", in.algorithms_size(), task::kMaxAlgorithms));
  t.num_algorithms = static_cast<uint32_t>(in.algorithms_size());
  for (int a = 0; a < in.algorithms_size(); ++a) {
    const AlgorithmChoice& c = in.algorithms(a);
    if (c.kind() > static_cast<uint32_t>(task::AlgorithmKind::kVrFedEm)) return bad(fmt::format("unknown algorithm {}", c.kind()));
    t.algorithms[a] = task::AlgorithmChoice{static_cast<task::AlgorithmKind>(c.kind()), c.rr()};
  }
  const HyperSpec& h = in.hyper();
  t.hyper.step = h.step();
  t.hyper.local_steps = h.local_steps();
  t.hyper.comm_prob = h.comm_prob();
  t.hyper.batch = h.batch();
  t.hyper.prox_mu = h.prox_mu();
  t.hyper.server_step = h.server_step();
  t.hyper.burn_in = h.burn_in();
  t.hyper.em_step = h.em_step();
  t.hyper.inner_iters = h.inner_iters();
  const CompressionSpec& c = in.compression();
  if (c.quantizer() > static_cast<uint32_t>(compression::QuantizerKind::kRounding)) return bad("unknown quantizer");
  t.compression.quantizer.kind = static_cast<compression::QuantizerKind>(c.quantizer());
  t.compression.quantizer.levels = c.levels();
  t.compression.quantizer.elias_gamma = c.elias_gamma();
  t.compression.quantizer.bits = c.bits();
  t.compression.quantizer.clip = c.clip();
  t.compression.control_variates = c.control_variates();
  t.compression.downlink = c.downlink();
  t.secagg.enabled = in.secagg().enabled();
  t.secagg.neighbours = in.secagg().neighbours();
  t.participation = in.participation();
  t.seed = in.seed();
  t.rounds = in.rounds();
  t.runs = in.runs();
  t.privacy.enabled = in.privacy().enabled();
  if (t.privacy.enabled) {
    t.privacy.clip = in.privacy().clip();
    t.privacy.noise_multiplier = in.privacy().noise_multiplier();
    t.privacy.distributed = in.privacy().distributed();
    if (t.privacy.distributed) {
      t.privacy.has_test_seed = in.privacy().has_test_seed();
      t.privacy.device_variance = in.privacy().device_variance();
      t.privacy.quorum_ppm = in.privacy().quorum_ppm();
      t.privacy.test_seed = in.privacy().test_seed();
    }
  }
  if (const char* why = task::Invalid(t)) return bad(why);
  return Status::Ok();
}

// ---------------------------------------------------------------- rounds

void Encode(const protocol::Announcement& m, Envelope& env) {
  RoundAnnouncement* a = env.mutable_announce();
  Head(m.id, a);
  a->set_kind(static_cast<uint32_t>(m.kind));
  a->set_local_steps(m.local_steps);
  a->set_report(m.report);
  a->set_deadline_ms(m.deadline_ms);
  a->mutable_model()->Add(m.model.data, m.model.data + m.model.size);
  a->set_model_version(m.model_version);
  if (m.model_bytes > 0) a->set_model_bytes(m.model_bytes);
  if (m.clip > 0) a->set_clip(m.clip);
  if (m.weight > 0) a->set_weight(m.weight);
  if (m.resume)
    for (uint32_t k = 0; k < task::kMaxSegments; ++k) a->add_resume_bytes(m.resume_bytes[k]);
  if (m.has_delta) {
    a->set_has_delta(true);
    a->set_delta_base(m.delta_base);
    for (uint32_t k = 0; k < task::kMaxSegments && m.delta[k].size > 0; ++k)
      a->add_delta(Bytes(m.delta[k].data, m.delta[k].size));
  }
  if (m.secagg.enabled) {
    SecAggParams* p = a->mutable_secagg();
    p->set_round_id(m.secagg.round_id);
    p->set_graph_seed(m.secagg.graph_seed);
    p->set_n(m.secagg.n);
    p->set_k(m.secagg.k);
    p->set_t(m.secagg.t);
    p->set_id(m.secagg.id);
  }
}

void Encode(const protocol::Update& m, Envelope& env) {
  Update* u = env.mutable_update();
  Head(m.id, u);
  u->set_encoding(static_cast<uint32_t>(m.encoding));
  for (uint32_t k = 0; k < m.segments; ++k) {
    if (m.chunked) u->add_payload_bytes(m.payload_bytes[k]);
    else u->add_payload(Bytes(m.payload[k].data, m.payload[k].size));
  }
  u->set_sample_count(m.sample_count);
  if (m.clip_indicator != 0) u->set_clip_indicator(m.clip_indicator);
  EncodeReport(m.report, u);
}

void Encode(const protocol::Chunk& m, Envelope& env) {
  Chunk* c = env.mutable_chunk();
  Head(m.id, c);
  c->set_segment(m.segment);
  c->set_offset(m.offset);
  c->set_total(m.total);
  c->set_data(Bytes(m.data.data, m.data.size));
}

void Encode(const protocol::RoundResult& m, Envelope& env) {
  RoundResult* r = env.mutable_result();
  Head(m.id, r);
  r->set_included(m.included);
  r->mutable_model()->Add(m.model.data, m.model.data + m.model.size);
}

void Encode(const protocol::SecAggAdvertiseMsg& m, Envelope& env) {
  SecAggAdvertise* a = env.mutable_secagg_advertise();
  Head(m.id, a);
  a->set_c_pk(Bytes(m.keys.c_pk, secagg::kKeyBytes));
  a->set_s_pk(Bytes(m.keys.s_pk, secagg::kKeyBytes));
}

void Encode(const protocol::SecAggKeysMsg& m, Envelope& env) {
  SecAggKeys* k = env.mutable_secagg_keys();
  Head(m.id, k);
  for (uint32_t i = 0; i < m.peers.size; ++i) {
    SecAggPeerKeys* p = k->add_peers();
    p->set_id(m.peers[i].id);
    p->set_c_pk(Bytes(m.peers[i].c_pk, secagg::kKeyBytes));
    p->set_s_pk(Bytes(m.peers[i].s_pk, secagg::kKeyBytes));
  }
}

void Encode(const protocol::SecAggSharesMsg& m, bool incoming, Envelope& env) {
  auto fill = [&](auto* s) {
    Head(m.id, s);
    for (uint32_t i = 0; i < m.shares.size; ++i) {
      SecAggCiphertext* w = s->add_shares();
      w->set_peer(incoming ? m.shares[i].from : m.shares[i].to);
      std::string b(secagg::kShareWireBytes, '\0');
      secagg::PackShareCiphertext(m.shares[i], reinterpret_cast<uint8_t*>(&b[0]));
      w->set_ciphertext(std::move(b));
    }
  };
  if (incoming) fill(env.mutable_secagg_shares_in());
  else fill(env.mutable_secagg_shares());
}

void Encode(const protocol::SecAggMaskedMsg& m, Envelope& env) {
  SecAggMasked* s = env.mutable_secagg_masked();
  Head(m.id, s);
  s->mutable_masked()->Add(m.masked.data, m.masked.data + m.masked.size);
  EncodeReport(m.report, s);
}

void Encode(const protocol::SecAggUnmaskRequestMsg& m, Envelope& env) {
  SecAggUnmaskRequest* s = env.mutable_secagg_unmask_request();
  Head(m.id, s);
  s->mutable_survivors()->Add(m.survivors.data, m.survivors.data + m.survivors.size);
}

void Encode(const protocol::SecAggCheckMsg& m, bool incoming, Envelope& env) {
  auto fill = [&](auto* s) {
    Head(m.id, s);
    for (uint32_t i = 0; i < m.tags.size; ++i) {
      SecAggTag* w = s->add_tags();
      w->set_peer(incoming ? m.tags[i].from : m.tags[i].to);
      w->set_tag(Bytes(m.tags[i].tag, secagg::kTagBytes));
    }
  };
  if (incoming) fill(env.mutable_secagg_checks());
  else fill(env.mutable_secagg_check());
}

void Encode(const protocol::SecAggUnmaskMsg& m, Envelope& env) {
  SecAggUnmask* s = env.mutable_secagg_unmask();
  Head(m.id, s);
  for (uint32_t i = 0; i < m.shares.size; ++i) {
    SecAggShare* w = s->add_shares();
    w->set_about(m.shares[i].about);
    w->set_kind(static_cast<uint32_t>(m.shares[i].kind));
    w->set_x(m.shares[i].x);
    w->set_share(Bytes(m.shares[i].share, secagg::kKeyBytes));
  }
}

// ---------------------------------------------------------------- a variant

bool Encode(const protocol::ClientMessage& m, Envelope& env) {
  switch (m.kind) {
    case MessageKind::kUpdate: Encode(m.update, env); return true;
    case MessageKind::kChunk: Encode(m.chunk, env); return true;
    case MessageKind::kSecAggAdvertise: Encode(m.advertise, env); return true;
    case MessageKind::kSecAggShares: Encode(m.shares, /*incoming=*/false, env); return true;
    case MessageKind::kSecAggMasked: Encode(m.masked, env); return true;
    case MessageKind::kSecAggCheck: Encode(m.check, /*incoming=*/false, env); return true;
    case MessageKind::kSecAggUnmask: Encode(m.unmask, env); return true;
    default: return false;
  }
}

bool Encode(const protocol::ServerMessage& m, Envelope& env) {
  switch (m.kind) {
    case MessageKind::kAnnouncement: Encode(m.announcement, env); return true;
    case MessageKind::kChunk: Encode(m.chunk, env); return true;
    case MessageKind::kRoundResult: Encode(m.result, env); return true;
    case MessageKind::kSecAggKeys: Encode(m.keys, env); return true;
    case MessageKind::kSecAggSharesIn: Encode(m.shares, /*incoming=*/true, env); return true;
    case MessageKind::kSecAggUnmaskRequest: Encode(m.unmask_request, env); return true;
    case MessageKind::kSecAggChecks: Encode(m.checks, /*incoming=*/true, env); return true;
    default: return false;
  }
}

}  // namespace fedrt::wire
