#include "fedrt/protocol/server_session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/privacy/ddg_codec.h"

namespace fedrt::protocol {

Status ServerSession::init(const ServerOptions& o) {
  task_ = o.task;
  agents_ = task_.problem.agents;
  if (agents_ == 0) return Status::InvalidArgument("server: the task has no agents");
  FEDRT_TRY(core_.init(task_, o.algorithm, o.run, o.initial));
  if (task_.privacy.enabled && !task_.privacy.distributed) {
    if (!o.standard_normal && !o.partial)  // a gateway adds no noise: the coordinator does
      return Status::InvalidArgument("privacy: this server has no noise source for central DP-FedAvg");
    standard_normal_ = o.standard_normal;
    noise_.assign(static_cast<size_t>(core_.dim()), 0.0);
  }
  FEDRT_TRY(init_adaptive_clip(o.adaptive));
  FEDRT_TRY(uplink_.init(task_, core_, agents_));
  uplink_.set_max_norm(o.max_update_norm > 0 ? o.max_update_norm : DefaultMaxUpdateNorm(task_));
  secure_ = task_.secagg.enabled;
  deadline_ms_ = o.deadline_ms;
  quorum_ = o.quorum;
  partial_ = o.partial;
  sample_connected_ = o.sample_connected;
  served_.assign(agents_, 1);
  id_ = RoundId{o.algorithm, o.run, 0};
  init_done_ = false;
  state_ = State::kIdle;
  for (auto* v : {&connected_, &refused_, &sampled_, &informed_, &announced_, &reported_, &report_listed_})
    v->assign(agents_, 0);
  uploads_.assign(agents_, Upload{});
  active_uploads_ = 0;
  reports_.assign(agents_, WorkReport{});
  samples_.assign(agents_, 0);
  reported_by_.clear();
  journals_.clear();
  journals_.resize(agents_);
  outbox_.clear();
  outbox_.reserve(4 * static_cast<size_t>(agents_) + 16);
  outbox_head_ = 0;
  commit_.members.reserve(agents_);
  notify_.reserve(agents_);
  result_.assign(core_.result_needs_model() ? static_cast<size_t>(core_.dim()) : 0, 0.0);
  downlink_ = task_.compression.downlink && task_.compression.enabled();
  if (downlink_) {
    const int seg = core_.segment_dim();
    down_memory_.assign(core_.chains() * compression::CompressedDifference<double>::ArenaBytes(seg) + 64, 0);
    Arena arena(down_memory_.data(), down_memory_.size());
    for (uint32_t k = 0; k < core_.chains(); ++k) {
      auto d = compression::CompressedDifference<double>::create(arena, seg, task_.compression.quantizer, false);
      if (!d.ok()) return d.status();
      down_[k] = *d;
    }
    down_wire_.assign(compression::MaxPayloadBytes(task_.compression.quantizer, seg), 0);
    xhat_.assign(core_.broadcast(), core_.broadcast() + core_.broadcast_dim());
    down_g_.assign(static_cast<size_t>(seg), 0.0);
    down_version_ = 0;
    for (auto& d : down_delta_) d.clear();
    synced_.assign(agents_, -1);
  }
  return Status::Ok();
}

void ServerSession::set_connected(uint32_t agent, bool connected, uint64_t now_ms) {
  now_ = now_ms;
  if (agent >= agents_) return;
  connected_[agent] = connected ? 1 : 0;
  if (state_ != State::kOpen) return;
  if (!connected) {
    if (secure_ && id_.round != kInitRound && secagg_.member(agent)) {
      secagg_.on_disconnect(agent);
      if (secagg_.phase_complete()) advance_secagg();
    }
    return;
  }
  // (Re)connected during the round: it may still report (a secure round
  // takes devices only while keys are advertised).
  if (informed_[agent] && !reported_[agent] && !refused_[agent] &&
      (!secure_ || id_.round == kInitRound || secagg_.phase() == 1))
    announce(agent);
}

// A participant refused during the open round (a device revoked) leaves it:
// the round closes once the others answered, without waiting for its
// deadline. A secure round drops it through its SecAgg+ phases instead
// (set_connected).
void ServerSession::set_refused(uint32_t agent, bool refused) {
  if (agent >= agents_) return;
  const bool newly = refused && !refused_[agent];
  refused_[agent] = refused ? 1 : 0;
  if (!newly || state_ != State::kOpen || !sampled_[agent] || reported_[agent]) return;
  if (secure_ && id_.round != kInitRound) return;
  if (uploads_[agent].active) abort_upload(agent);  // a part of its update is taken back
  ++withdrawn_;
  if (commit_.members.size() + withdrawn_ >= expected_) close(commit_.members.empty() ? "empty" : "all");
}

void ServerSession::announce(uint32_t agent) {
  if (!announced_[agent]) {
    announced_[agent] = 1;
    if (sends_delta(agent)) {
      for (uint32_t k = 0; k < core_.chains(); ++k) commit_.bits_down += 8ull * down_delta_[k].size();
    } else {
      commit_.bits_down += 64ull * announced_model().size;  // raw float64 broadcast (xhat whole, with the downlink)
    }
  }
  queue(agent, MessageKind::kAnnouncement);
}

Status ServerSession::open_round(uint32_t round, uint64_t now_ms) {
  if (state_ != State::kIdle) return Status::FailedPrecondition("server: a round is still open or unpublished");
  const bool initial = round == kInitRound;
  if (initial && !needs_initial_exchange()) return Status::FailedPrecondition("server: no initial exchange to run");
  if (!initial && needs_initial_exchange()) return Status::FailedPrecondition("server: the initial exchange comes first");
  now_ = now_ms;
  prev_round_ = had_round_ ? id_.round : kNoRound;  // a late repeat for it is a duplicate, not a stale update
  prev_reported_.swap(reported_);
  reported_.assign(agents_, 0);
  for (uint32_t c : reported_by_) {  // only they differ from zero: O(sampled), not O(N)
    reports_[c] = WorkReport{};
    samples_[c] = 0;
    report_listed_[c] = 0;
  }
  reported_by_.clear();
  had_round_ = true;
  id_.round = round;
  commit_ = Commit{};
  commit_.id = id_;
  taint_.clear();
  commit_.members.clear();
  phases_.clear();
  std::fill(announced_.begin(), announced_.end(), 0);
  uplink_.start_round();
  local_steps_ = initial ? 0 : core_.start_round(round);
  commit_.local_steps = local_steps_;
  expected_ = 0;
  withdrawn_ = 0;
  std::vector<uint32_t>& sampled_list = notify_;
  sampled_list.clear();
  for (uint32_t c = 0; c < agents_; ++c) {
    const bool s = !refused_[c] && (!sample_connected_ || initial || connected_[c]) &&
                   (initial || algorithms::IsSampled(task_.seed, id_.run, c, round, task_.participation));
    sampled_[c] = s ? 1 : 0;
    informed_[c] = s || (!initial && !refused_[c] && core_.informs_all()) ? 1 : 0;
    if (s) {
      if (served_[c]) ++expected_;
      sampled_list.push_back(c);
    }
  }
  commit_.sampled = expected_;
  if (adaptive_.on() && !initial) commit_.clip = clip_[0];
  state_ = State::kOpen;
  deadline_ = deadline_ms_ > 0 ? now_ms + deadline_ms_ : kNoDeadline;
  if (expected_ == 0) {
    close("empty");
    return Status::Ok();
  }
  if (secure_ && !initial) {
    uint32_t dim = core_.chains() * static_cast<uint32_t>(core_.segment_dim());
    if (task_.privacy.distributed) {  // the devices' noised integers: d_pad of them (privacy/ddg_codec.h)
      const task::PrivacySpec& p = task_.privacy;
      const char* why = privacy::DdgPlan(p.noise_multiplier, p.clip, p.quorum_ppm, p.device_variance, expected_, dim,
                                         task_.compression.quantizer.bits, ddg_);
      if (why == nullptr) why = privacy::DdgGroupFits(ddg_);
      if (why != nullptr) {
        fail(why);
        return Status::Ok();
      }
      dim = ddg_.d_pad;
    }
    Status st = secagg_.begin(task_, id_, sampled_list, dim, task_.compression.quantizer.bits);
    if (!st.ok()) {
      fail(st.message());
      return Status::Ok();
    }
  }
  if (initial || !core_.informs_all()) {  // the informed are the sampled, in agent order
    for (uint32_t c : sampled_list)
      if (connected_[c]) announce(c);
  } else {
    for (uint32_t c = 0; c < agents_; ++c)
      if (informed_[c] && connected_[c]) announce(c);
  }
  return Status::Ok();
}

bool ServerSession::next_outgoing(Outgoing& out) {
  if (outbox_head_ >= outbox_.size()) {
    outbox_.clear();
    outbox_head_ = 0;
    return false;
  }
  out = outbox_[outbox_head_++];
  return true;
}

Announcement ServerSession::announcement(uint32_t agent, uint64_t now_ms) const {
  Announcement a;
  a.id = id_;
  a.kind = id_.round == kInitRound ? WorkKind::kInitialStatistic : WorkKind::kLocalWork;
  a.local_steps = local_steps_;
  a.report = sampled_[agent] != 0;
  if (downlink_) a.model_version = down_version_;
  if (sends_delta(agent)) {
    a.has_delta = true;
    a.delta_base = down_version_ - 1;
    for (uint32_t k = 0; k < core_.chains(); ++k)
      a.delta[k] = View<uint8_t>{down_delta_[k].data(), static_cast<uint32_t>(down_delta_[k].size())};
  } else {
    a.model = announced_model();
  }
  const Upload& up = uploads_[agent];
  if (up.active && up.header.id == id_) {
    a.resume = true;
    for (uint32_t k = 0; k < task::kMaxSegments; ++k) a.resume_bytes[k] = up.received[k];
  }
  if (adaptive_.on() && a.kind == WorkKind::kLocalWork) a.clip = clip_[0];
  if (deadline_ != kNoDeadline)
    a.deadline_ms = deadline_ > now_ms ? static_cast<uint32_t>(std::min<uint64_t>(deadline_ - now_ms, 0xFFFFFFFFu)) : 0;
  if (secure_ && a.kind == WorkKind::kLocalWork) a.secagg = secagg_.params_for(agent);
  return a;
}

RoundResult ServerSession::result(uint32_t agent) const {
  RoundResult r;
  r.id = commit_.id;
  r.included = std::find(commit_.members.begin(), commit_.members.end(), agent) != commit_.members.end();
  if (core_.result_needs_model() && commit_.id.round != kInitRound)
    r.model = View<double>{result_.data(), static_cast<uint32_t>(result_.size())};
  return r;
}

ServerMessage ServerSession::message(const Outgoing& out, uint64_t now_ms) {
  ServerMessage m;
  m.kind = out.kind;
  switch (out.kind) {
    case MessageKind::kAnnouncement: m.announcement = announcement(out.agent, now_ms); break;
    case MessageKind::kRoundResult: m.result = result(out.agent); break;
    case MessageKind::kSecAggKeys: m.keys = secagg_keys(out.agent); break;
    case MessageKind::kSecAggSharesIn: m.shares = secagg_shares_in(out.agent); break;
    case MessageKind::kSecAggUnmaskRequest: m.unmask_request = secagg_unmask_request(out.agent); break;
    case MessageKind::kSecAggChecks: m.checks = secagg_checks(out.agent); break;
    default: m.kind = MessageKind::kNone; break;
  }
  return m;
}

Verdict ServerSession::on_message(uint32_t agent, const ClientMessage& m, uint64_t now_ms) {
  switch (m.kind) {
    case MessageKind::kUpdate: return on_update(agent, m.update, now_ms);
    case MessageKind::kChunk: return on_chunk(agent, m.chunk, now_ms);
    case MessageKind::kSecAggAdvertise: return on_secagg_advertise(agent, m.advertise, now_ms);
    case MessageKind::kSecAggShares: return on_secagg_shares(agent, m.shares, now_ms);
    case MessageKind::kSecAggMasked: return on_secagg_masked(agent, m.masked, now_ms);
    case MessageKind::kSecAggCheck: return on_secagg_check(agent, m.check, now_ms);
    case MessageKind::kSecAggUnmask: return on_secagg_unmask(agent, m.unmask, now_ms);
    default: return Verdict{Refusal::kMalformed, "a message devices do not send"};
  }
}

Verdict ServerSession::on_update(uint32_t agent, const Update& u, uint64_t now_ms) {
  now_ = now_ms;
  auto refuse = [](Refusal r, std::string why) { return Verdict{r, std::move(why)}; };
  if (agent >= agents_) return refuse(Refusal::kMalformed, "unknown agent");
  const bool same_run = u.id.algorithm == id_.algorithm && u.id.run == id_.run;
  const bool is_open = state_ == State::kOpen;
  // kInitRound (0xFFFFFFFF) precedes round 0 of a run.
  auto order = [](uint32_t r) { return r == kInitRound ? -1.0 : static_cast<double>(r); };
  if (same_run && u.id.round == id_.round && reported_[agent])
    return refuse(Refusal::kDuplicate, fmt::format("round {} already has this device's update", u.id.round));
  if (same_run && u.id.round == prev_round_ && prev_round_ != kNoRound && prev_reported_[agent])
    return refuse(Refusal::kDuplicate,
                  fmt::format("round {} already has this device's update (the round is closed)", u.id.round));
  if (!is_open || !same_run || order(u.id.round) < order(id_.round))
    return refuse(Refusal::kStaleRound, fmt::format("round {} is closed; the open round is {}", u.id.round,
                                                    is_open ? std::to_string(id_.round) : std::string("none")));
  if (u.id.round != id_.round)
    return refuse(Refusal::kFutureRound, fmt::format("round {} is not open yet; the open round is {}", u.id.round, id_.round));
  if (!sampled_[agent]) return refuse(Refusal::kNotSampled, fmt::format("agent {} is not sampled in this round", agent));
  if (secure_ && id_.round != kInitRound)
    return refuse(Refusal::kMalformed, "this round uses secure aggregation: answer with SecAggAdvertise, not an Update");
  if (adaptive_.on() && id_.round != kInitRound && (u.clip_indicator < 1 || u.clip_indicator > 2))
    return refuse(Refusal::kMalformed, "adaptive clipping: the update has no clip indicator (Update.clip_indicator 1 "
                                       "or 2 answers an announcement's clip)");
  if (u.chunked) return begin_upload(agent, u);
  if (uploads_[agent].active) abort_upload(agent);  // the device sends the update whole after all
  if (checks_clip()) {
    const double norm = payload_norm(u);
    if (norm != -1 && over_clip(norm)) return drop_unclipped(agent, norm);  // -1: not raw dx, the uplink refuses it
  }
  auto bits = uplink_.accept(agent, u, announced_model().data, core_);
  if (!bits.ok()) {
    const StatusCode c = bits.status().code();
    if (c == StatusCode::kResourceExhausted) return drop_update(agent, Refusal::kOverNorm, bits.status().message());
    return refuse(c == StatusCode::kOutOfRange ? Refusal::kDimension : Refusal::kMalformed, bits.status().message());
  }
  record(agent, u, *bits);
  Verdict v;
  v.whole = true;
  return v;
}

// Agent c's report is set this round: open_round() resets it (once, however
// many messages set it).
void ServerSession::list_report(uint32_t agent) {
  if (report_listed_[agent]) return;
  report_listed_[agent] = 1;
  reported_by_.push_back(agent);
}

// Agent c's update is aggregated: it is a member of the round.
void ServerSession::record(uint32_t agent, const Update& u, uint64_t bits) {
  reported_[agent] = 1;
  reports_[agent] = u.report;
  samples_[agent] = u.sample_count;
  if (adaptive_.on()) indicator_[agent] = u.clip_indicator;
  list_report(agent);
  commit_.members.push_back(agent);
  commit_.bits_up += bits;
  commit_.samples += u.sample_count;
  if (commit_.members.size() + withdrawn_ == expected_) close("all");
}

Verdict ServerSession::secagg_message(uint32_t agent, int phase, const RoundId& id, const SecAggAdvertiseMsg* ad,
                                      const SecAggSharesMsg* sh, const SecAggMaskedMsg* ma, const SecAggCheckMsg* ch,
                                      const SecAggUnmaskMsg* un, uint64_t now_ms) {
  now_ = now_ms;
  if (agent >= agents_) return Verdict{Refusal::kMalformed, "unknown agent"};
  if (!secure_) return Verdict{Refusal::kMalformed, "this experiment does not use secure aggregation"};
  if (state_ != State::kOpen || id != id_) return Verdict{Refusal::kStaleRound, "secure aggregation message for another round"};
  Status st = secagg_.on_message(agent, phase, id, ad, sh, ma, ch, un);
  if (!st.ok()) {
    Refusal r = Refusal::kMalformed;
    if (st.code() == StatusCode::kFailedPrecondition) r = Refusal::kNotSampled;
    else if (st.code() == StatusCode::kAlreadyExists) r = Refusal::kDuplicate;
    else if (st.code() == StatusCode::kOutOfRange) r = Refusal::kDimension;
    Verdict v{r, st.message()};
    if (secagg_.phase_complete()) advance_secagg();  // a refusal may end the phase
    return v;
  }
  if (phase == 1) reported_[agent] = 1;
  if (secagg_.phase_complete()) advance_secagg();
  return Verdict{};
}

Verdict ServerSession::on_secagg_advertise(uint32_t agent, const SecAggAdvertiseMsg& m, uint64_t now_ms) {
  return secagg_message(agent, 1, m.id, &m, nullptr, nullptr, nullptr, nullptr, now_ms);
}
Verdict ServerSession::on_secagg_shares(uint32_t agent, const SecAggSharesMsg& m, uint64_t now_ms) {
  return secagg_message(agent, 2, m.id, nullptr, &m, nullptr, nullptr, nullptr, now_ms);
}
Verdict ServerSession::on_secagg_masked(uint32_t agent, const SecAggMaskedMsg& m, uint64_t now_ms) {
  if (agent < agents_ && state_ == State::kOpen && m.id == id_) {
    reports_[agent] = m.report;
    list_report(agent);
  }
  return secagg_message(agent, 3, m.id, nullptr, nullptr, &m, nullptr, nullptr, now_ms);
}
Verdict ServerSession::on_secagg_check(uint32_t agent, const SecAggCheckMsg& m, uint64_t now_ms) {
  return secagg_message(agent, 4, m.id, nullptr, nullptr, nullptr, &m, nullptr, now_ms);
}
Verdict ServerSession::on_secagg_unmask(uint32_t agent, const SecAggUnmaskMsg& m, uint64_t now_ms) {
  return secagg_message(agent, 5, m.id, nullptr, nullptr, nullptr, nullptr, &m, now_ms);
}

void ServerSession::advance_secagg() {
  while (state_ == State::kOpen) {
    phases_.push_back(PhaseClosed{secagg_.phase(), secagg_.answered(), secagg_.n(),
                                  secagg_.phase_complete() ? "all" : "deadline"});
    // Distributed DP: an honest server never unmasks a sum that fewer than m
    // devices' noise protects (docs/privacy-distributed.md, "Distributed DP under SecAgg+").
    if (task_.privacy.distributed && secagg_.phase() == 3 && secagg_.answered() < ddg_.m)
      return fail(fmt::format("distributed DP: {} of the {} sampled devices sent their masked input, fewer than the "
                              "{} whose noise the round needs (privacy.quorum): the sum is not unmasked",
                              secagg_.answered(), ddg_.n, ddg_.m));
    Status st = secagg_.advance(notify_);
    if (!st.ok()) return fail(st.message());
    if (secagg_.finished()) {
      commit_.members = secagg_.contributors();
      commit_.cheaters = secagg_.cheaters();
      commit_.off_shares = secagg_.off_shares();
      if (task_.privacy.distributed) {
        const uint32_t m = static_cast<uint32_t>(commit_.members.size());
        if (m < ddg_.m)
          return fail(fmt::format("distributed DP: {} of the {} sampled devices survived, fewer than the {} whose "
                                  "noise the round needs (privacy.quorum): the round is not released",
                                  m, ddg_.n, ddg_.m));
        ddg_work_.resize(ddg_.d_pad);
        noise_.resize(ddg_.d);
        const uint64_t seed = privacy::DdgRotationSeed(task_.seed, id_.algorithm, id_.run, id_.round);
        privacy::DdgDecode(secagg_.sum().data(), ddg_, seed, ddg_work_.data(), noise_.data());
        core_.add_sum(0, noise_.data(), m);
        return close("secagg");
      }
      if (const int64_t i = secagg_.first_out_of_range(); i >= 0)
        return fail(fmt::format("secure aggregation: the unmasked sum of coordinate {} is {}, above the {} that {} honest "
                                "inputs can reach: a masked input was out of range; the round's result is not applied",
                                i, secagg_.sum()[static_cast<size_t>(i)], commit_.members.size() * ((1ull << task_.compression.quantizer.bits) - 1),
                                commit_.members.size()));
      uplink_.close(static_cast<uint32_t>(commit_.members.size()), secagg_.sum().data(), announced_model().data, core_);
      return close("secagg");
    }
    const MessageKind kind = secagg_.phase() == 2   ? MessageKind::kSecAggKeys
                             : secagg_.phase() == 3 ? MessageKind::kSecAggSharesIn
                             : secagg_.phase() == 4 ? MessageKind::kSecAggUnmaskRequest
                                                    : MessageKind::kSecAggChecks;
    for (uint32_t a : notify_)
      if (connected_[a]) queue(a, kind);
    if (deadline_ms_ > 0) deadline_ = now_ + deadline_ms_;  // each phase has its own deadline
    if (!secagg_.phase_complete()) return;  // wait for the answers (or the phase deadline)
  }
}

void ServerSession::tick(uint64_t now_ms) {
  if (state_ != State::kOpen || now_ms < deadline_) return;
  now_ = now_ms;
  if (secure_ && id_.round != kInitRound) {
    advance_secagg();  // the phase closes with the devices that answered
    return;
  }
  if (partial_ || commit_.members.size() >= quorum_needed()) {  // a gateway hands up what it has: quorum is the coordinator's
    close("deadline");
  } else {
    deadline_ = now_ms + deadline_ms_;  // below quorum: extend
  }
}

void ServerSession::expire(uint64_t now_ms) {
  if (state_ != State::kOpen) return;
  now_ = now_ms;
  if (secure_ && id_.round != kInitRound) {
    advance_secagg();
    return;
  }
  close("deadline");
}

uint32_t ServerSession::quorum_needed() const {
  return std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(quorum_ * expected_ - 1e-9)));
}

void ServerSession::fail(const std::string& why) {
  commit_.failure = why;
  commit_.members.clear();
  state_ = State::kClosed;
  commit_.closed_by = "failed";
  commit_.bits_up += secagg_.bytes_up() * 8;
  commit_.bits_down += secagg_.bytes_down() * 8;
  deadline_ = kNoDeadline;
}

void ServerSession::close(const char* by) {
  if (partial_) return close_partial(by);
  const bool initial = id_.round == kInitRound;
  if (secure_ && !initial) {
    commit_.bits_up = secagg_.bytes_up() * 8;  // the secure round's traffic replaces the payload bits
    commit_.bits_down += secagg_.bytes_down() * 8;
  }
  for (uint32_t c = 0; c < agents_ && active_uploads_ > 0; ++c)
    if (uploads_[c].active) abort_upload(c);  // cut off and not resumed in time: taken back
  if (!taint_.empty()) return fail(taint_);
  if (!initial && !secure_)
    uplink_.close(static_cast<uint32_t>(commit_.members.size()), nullptr, announced_model().data, core_);
  if (initial) {
    init_done_ = true;
  } else {
    if (task_.privacy.enabled && !task_.privacy.distributed) {  // N(0, sigma^2 clip^2) per coordinate on the sum of the clipped dx
      const Status drawn = standard_normal_(noise_.data(), noise_.size());  // adaptive: one more, the count's
      if (!drawn.ok()) return fail(drawn.message());
      const double sigma = adaptive_.on() ? adaptive_.noise_multiplier : task_.privacy.noise_multiplier;
      const double scale = sigma * clip();
      for (size_t i = 0; i < static_cast<size_t>(core_.dim()); ++i) noise_[i] *= scale;
      core_.add_noise(0, noise_.data());
      if (adaptive_.on()) adapt_clip();
    }
    core_.finish_round(id_.round);
    if (downlink_) {
      // The members' updates prove they hold this round's xhat; then its next version
      // (the bits count when it is announced).
      for (uint32_t c : commit_.members) synced_[c] = down_version_;
      compress_broadcast();
    }
  }
  if (core_.result_needs_model()) {
    const double* r = downlink_ ? xhat_.data() : core_.model();
    std::copy(r, r + core_.dim(), result_.begin());
  }
  commit_.closed_by = by;
  std::sort(commit_.members.begin(), commit_.members.end());
  summarize_reports();
  state_ = State::kClosed;
  deadline_ = kNoDeadline;
}

// The members' reports in agent order, and their means: a fixed order, so
// every driver gets the same bits whatever order the updates arrived in.
void ServerSession::summarize_reports() {
  commit_.reports.clear();
  commit_.member_samples.clear();
  double before = 0, after = 0;
  uint32_t n_before = 0, n_after = 0;
  for (uint32_t m : commit_.members) {
    const WorkReport& r = reports_[m];
    commit_.reports.push_back(r);
    commit_.member_samples.push_back(samples_[m]);
    if (r.loss_before == r.loss_before) before += r.loss_before, ++n_before;
    if (r.loss_after == r.loss_after) after += r.loss_after, ++n_after;
  }
  commit_.train_loss = n_before > 0 ? before / n_before : std::nan("");
  commit_.local_loss = n_after > 0 ? after / n_after : std::nan("");
}

void ServerSession::publish() {
  if (state_ != State::kClosed) return;
  for (uint32_t c : commit_.members)
    if (connected_[c]) queue(c, MessageKind::kRoundResult);
  state_ = State::kIdle;
}

void ServerSession::state_slices(std::vector<StateSlice>& out) const {
  core_.state_slices(out);
  if (adaptive_.on()) out.push_back({clip_.data(), clip_.size()});
  const std::vector<double>& w = uplink_.memory_sum();
  if (!w.empty()) out.push_back({w.data(), w.size()});
  if (downlink_) out.push_back({xhat_.data(), xhat_.size()});
}

void ServerSession::import_targets(std::vector<StateTarget>& out) {
  core_.import_targets(out);
  if (adaptive_.on()) out.push_back({clip_.data(), clip_.size()});
  std::vector<double>& w = uplink_.mutable_memory_sum();
  if (!w.empty()) out.push_back({w.data(), w.size()});
  if (downlink_) out.push_back({xhat_.data(), xhat_.size()});
}

size_t ServerSession::state_size() const {
  std::vector<StateSlice> parts;
  state_slices(parts);
  size_t n = 0;
  for (const StateSlice& p : parts) n += p.size;
  return n;
}

void ServerSession::export_state(std::vector<double>& out) const {
  std::vector<StateSlice> parts;
  state_slices(parts);
  out.clear();
  for (const StateSlice& p : parts) out.insert(out.end(), p.data, p.data + p.size);
}

Status ServerSession::import_state(const std::vector<double>& in) {
  if (in.size() != state_size()) return Status::DataLoss("server state: size does not match the algorithm");
  std::vector<StateTarget> parts;
  import_targets(parts);
  size_t at = 0;
  for (const StateTarget& p : parts) {
    std::copy(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + p.size), p.data);
    at += p.size;
  }
  return finish_import();
}

}  // namespace fedrt::protocol
