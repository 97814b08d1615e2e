#include "fedrt/coordinator/fleet_rounds.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "fedrt/coordinator/log.h"
#include "fedrt/tls/tls.h"
#include "fedrt/coordinator/broadcast_stream.h"

namespace fedrt::net {

using protocol::MessageKind;
using protocol::ServerSession;

namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

const char* PhaseName(int phase) {
  static const char* const kNames[] = {"?", "advertise", "shares", "masked", "check", "unmask"};
  return phase >= 1 && phase <= 5 ? kNames[phase] : "?";
}

}  // namespace

Status FleetRounds::init(const FleetRoundsOptions& o, StateStore* store, Send send, Stream stream, Measure measure) {
  opt_ = o;
  store_ = store;
  send_ = std::move(send);
  stream_ = std::move(stream);
  measure_ = std::move(measure);
  events_ = o.events != nullptr ? o.events : &no_events_;
  agents_ = o.task.problem.agents;
  done_.assign(static_cast<size_t>(o.task.num_algorithms) * o.task.runs, std::vector<char>(o.task.rounds + 1, 0));
  connected_.assign(agents_, 0);
  refused_.assign(agents_, 0);
  chunk_limit_.assign(agents_, task::kChunkBytes);
  auto rounds = store_->load_rounds(kNoVectors);
  if (!rounds.ok()) return rounds.status();
  for (const RoundRecord& r : *rounds) {
    if (r.algorithm >= o.task.num_algorithms || r.run >= o.task.runs) continue;
    const size_t slot = r.round == protocol::kInitRound ? 0 : static_cast<size_t>(r.round) + 1;
    if (slot >= done_[0].size()) continue;
    done_[r.algorithm * o.task.runs + r.run][slot] = 1;
    ++done_count_;
  }
  if (o.privacy != nullptr)  // each run's ledger as its committed rounds left it (their sampled counts)
    for (uint32_t a = 0; a < o.task.num_algorithms; ++a)
      for (uint32_t r = 0; r < o.task.runs; ++r) {
        std::vector<uint32_t> sampled;
        for (const RoundRecord& rec : *rounds)
          if (rec.algorithm == a && rec.run == r && rec.round != protocol::kInitRound && rec.round < o.task.rounds) {
            if (sampled.size() <= rec.round) sampled.resize(rec.round + 1, 0);
            sampled[rec.round] = rec.sampled;
          }
        FEDRT_TRY(o.privacy->resume(a, r, sampled));
      }
  return Status::Ok();
}

bool FleetRounds::done(uint32_t a, uint32_t r, uint32_t t) const {
  const size_t slot = t == protocol::kInitRound ? 0 : static_cast<size_t>(t) + 1;
  return done_[a * opt_.task.runs + r][slot] != 0;
}

std::string FleetRounds::behind(const protocol::RoundId& p) const {
  if (async_mode()) return "";  // an async job's number is no round: nothing to check it against
  if (p.algorithm >= opt_.task.num_algorithms || p.run >= opt_.task.runs) return "";  // not this experiment's
  if (p.round == protocol::kInitRound || p.round == 0 || p.round > opt_.task.rounds) return "";
  if (done(p.algorithm, p.run, p.round - 1)) return "";
  uint32_t held = 0;  // rounds of that run the state holds, from its start
  while (held < p.round && done(p.algorithm, p.run, held)) ++held;
  return fmt::format("a pending update for alg={} run={} round={}, so round {} was committed, but this state db holds "
                     "that run's rounds up to {}",
                     opt_.names[p.algorithm], p.run, round_name(p.round), round_name(p.round - 1),
                     held == 0 ? std::string("none") : round_name(held - 1));
}

FleetRounds::Slot FleetRounds::next_slot() const {
  for (uint32_t a = 0; a < opt_.task.num_algorithms; ++a)
    for (uint32_t r = 0; r < opt_.task.runs; ++r)
      for (uint32_t t = 0; t < rounds_per_run(r); ++t) {  // privacy.epsilon_budget may end a run early
        if (opt_.privacy != nullptr && opt_.privacy->stopped(a, r)) break;
        if (!done(a, r, t)) return Slot{a, r, t, true};
      }
  return Slot{};
}

std::string FleetRounds::round_name(uint32_t t) const {
  return t == protocol::kInitRound ? std::string("init") : std::to_string(t + 1);
}

// The session of (algorithm, run), resumed from its last committed round.
Status FleetRounds::ensure_session(uint32_t a, uint32_t r) {
  if (session_ != nullptr && session_alg_ == a && session_run_ == r) return Status::Ok();
  auto rounds = store_->load_rounds(kNoVectors);  // rows only; the initial exchange sorts last
  if (!rounds.ok()) return rounds.status();
  const RoundRecord* last = nullptr;
  const RoundRecord* initial = nullptr;
  for (const RoundRecord& rec : *rounds) {
    if (rec.algorithm != a || rec.run != r) continue;
    if (rec.round == protocol::kInitRound) initial = &rec;
    else if (last == nullptr || rec.round > last->round) last = &rec;
  }
  auto s = std::make_unique<ServerSession>();
  protocol::ServerOptions so;
  so.task = opt_.task;
  so.algorithm = a;
  so.run = r;
  so.initial = opt_.initial;
  so.deadline_ms = opt_.deadline_ms;
  so.quorum = opt_.quorum;
  so.max_update_norm = opt_.max_update_norm;
  if (opt_.privacy != nullptr) {  // resumed: a test_seed stream goes on after the committed rounds' draws
    so.standard_normal = opt_.privacy->noise(a, r, last != nullptr ? last->round + 1 : 0, opt_.initial.size);
    so.adaptive = opt_.privacy->adaptive();
  }
  FEDRT_TRY(s->init(so));
  if (initial != nullptr) s->mark_initial_exchange_done();
  const RoundRecord* resume = last != nullptr ? last : initial;
  if (resume != nullptr) {  // the stored state straight into the session's memory
    std::vector<protocol::StateTarget> into;
    s->import_targets(into);
    Status st = store_->read_state(a, r, resume->round, into);
    if (st.ok()) st = s->finish_import();
    if (!st.ok())
      return Status(st.code(), fmt::format("state db: round {} of {} run {}: {}", round_name(resume->round),
                                           opt_.names[a], r, st.message()));
  }
  for (uint32_t c = 0; c < agents_; ++c) {
    s->set_refused(c, refused_[c] != 0);
    s->set_connected(c, connected_[c] != 0, 0);
  }
  session_ = std::move(s);
  session_alg_ = a;
  session_run_ = r;
  return Status::Ok();
}

void FleetRounds::start(uint64_t now_ms) {
  if (started_) return;
  started_ = true;
  Status st = async_mode() ? async_open() : open(now_ms);
  if (!st.ok()) {
    fatal_ = st;
    return;
  }
  pump(now_ms);
}

// Opens the next round of the schedule (FedEM's initial exchange before round 0).
Status FleetRounds::open(uint64_t now_ms) {
  const Slot s = next_slot();
  if (!s.valid) {
    finished_ = true;
    return Status::Ok();
  }
  FEDRT_TRY(ensure_session(s.algorithm, s.run));
  const uint32_t t = session_->needs_initial_exchange() ? protocol::kInitRound : s.round;
  FEDRT_TRY(session_->open_round(t, now_ms));
  bytes_down_.assign(agents_, 0);
  bytes_up_.assign(agents_, 0);
  t_open_ = t_phase_ = std::chrono::steady_clock::now();
  if (opt_.traffic != nullptr) traffic_at_open_ = *opt_.traffic;
  const protocol::Commit& c = session_->commit();
  CoordinatorLog("open alg={} run={} round={} sampled={}/{} local_steps={}", opt_.names[s.algorithm], s.run,
                 round_name(t), c.sampled, agents_, c.local_steps);
  events_->round_opened(protocol::RoundId{s.algorithm, s.run, t}, c.sampled);
  masked_told_ = false;
  if (opt_.gateways != nullptr && session_->round_open()) opt_.gateways->round_opened(*session_);
  if (opt_.task.secagg.enabled && t != protocol::kInitRound && session_->secagg().phase() == 1) {
    const secagg::RoundParams& p = session_->secagg().params();
    events_->secagg_phase(1, p.n);
    CoordinatorLog("secagg alg={} run={} round={} n={} k={} t={}", opt_.names[s.algorithm], s.run, round_name(t), p.n,
                   p.k, p.t);
  }
  return Status::Ok();
}

void FleetRounds::deliver(uint64_t now_ms) {
  protocol::Outgoing out;
  while (session_ != nullptr && session_->next_outgoing(out)) {
    const bool routed = opt_.gateways != nullptr && out.agent < agents_ && opt_.gateways->routed(out.agent);
    if (out.kind == MessageKind::kAnnouncement) {
      if (routed) events_->announced(out.agent);  // its gateway announces, from the round's basis
      else announce(out.agent, now_ms);
      continue;
    }
    if (routed && out.kind == MessageKind::kRoundResult) continue;  // in its gateway's verdict
    if (routed && out.kind == MessageKind::kSecAggSharesIn && !masked_told_) {
      masked_told_ = true;  // before the first relayed shares: the gateways learn who owes a masked input
      opt_.gateways->masked_wanted(*session_);
    }
    protocol::ServerMessage m = session_->message(out, now_ms);
    if (opt_.faults != nullptr) opt_.faults->sending(*session_, out.agent, m);
    wire::Envelope env;
    if (!wire::Encode(m, env)) continue;
    if (out.agent < agents_) {
      const uint64_t bytes = env.ByteSizeLong() + 4;  // + the frame's length prefix
      bytes_down_[out.agent] += bytes;
      events_->traffic(out.agent, 0, bytes);
    }
    send_(out.agent, env);
  }
}

void FleetRounds::set_chunk_limit(uint32_t agent, uint32_t bytes) {
  if (agent < agents_) chunk_limit_[agent] = bytes == 0 ? task::kChunkBytes : bytes;
}

// An announcement; a broadcast longer than the agent's chunk size goes as a
// header and chunks cut from the session's model as the connection drains
// (docs/architecture.md, "Chunked transfer").
void FleetRounds::announce(uint32_t agent, uint64_t now_ms) {
  protocol::Announcement a = session_->announcement(agent, now_ms);
  const uint64_t total = 8ull * a.model.size;
  const bool chunked = CutAnnouncement(a, agent < agents_ ? chunk_limit_[agent] : task::kChunkBytes);
  wire::Envelope env;
  wire::Encode(a, env);
  if (agent < agents_) {
    const uint64_t bytes = env.ByteSizeLong() + 4;  // + the frame's length prefix
    bytes_down_[agent] += bytes;
    events_->traffic(agent, 0, bytes);
  }
  events_->announced(agent);
  send_(agent, env);
  if (!chunked) return;
  auto model = [this](const protocol::RoundId& id) -> const double* {
    if (session_ == nullptr || !session_->round_open() || session_->current() != id) return nullptr;
    return session_->announced_model().data;
  };
  auto sent = [this, agent](uint64_t bytes) {
    if (agent >= bytes_down_.size()) return;
    bytes_down_[agent] += bytes;
    events_->traffic(agent, 0, bytes);
  };
  stream_(agent, BroadcastChunks(a.id, total, agent < agents_ ? chunk_limit_[agent] : task::kChunkBytes, model, sent));
}

void FleetRounds::log_phases(uint64_t) {
  if (session_ == nullptr || session_->phases_closed().empty()) return;
  const protocol::RoundId& id = session_->current();
  for (const protocol::PhaseClosed& p : session_->phases_closed()) {
    CoordinatorLog("secagg_phase alg={} run={} round={} phase={} answered={}/{} closed_by={} ms={:.3f}",
                   opt_.names[id.algorithm], id.run, round_name(id.round), PhaseName(p.phase), p.answered, p.n, p.by,
                   MsSince(t_phase_));
    t_phase_ = std::chrono::steady_clock::now();
    if (p.phase < 5 && session_->round_open()) events_->secagg_phase(p.phase + 1, p.answered);
  }
  session_->clear_phases_closed();
}

// A commit's row of the round log (its members' reports are the caller's),
// scored by the family's measure of the state after it.
RoundRecord FleetRounds::record_of(const protocol::Commit& c, const protocol::ServerCore& core) {
  RoundRecord rec;
  rec.algorithm = c.id.algorithm;
  rec.run = c.id.run;
  rec.round = c.id.round;
  rec.samples = c.samples;
  rec.agents = static_cast<uint32_t>(c.members.size());
  rec.sampled = c.sampled;
  rec.error = last_error_ = measure_(core);
  rec.bits_up = c.bits_up;
  rec.bits_down = c.bits_down;
  rec.closed_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  rec.closed_by = c.closed_by;
  rec.failure = c.failure;
  rec.train_loss = c.train_loss;
  rec.local_loss = c.local_loss;
  return rec;
}

// The closed round, durable before anyone learns the result (write-ahead).
Status FleetRounds::persist() {
  const protocol::Commit& c = session_->commit();
  const protocol::ServerCore& core = session_->core();
  RoundRecord rec = record_of(c, core);
  RoundVectors vectors;  // the model and the state are written from the session's memory
  vectors.theta.push_back({core.model(), static_cast<size_t>(core.dim())});
  session_->state_slices(vectors.state);
  const bool secure = opt_.task.secagg.enabled && c.id.round != protocol::kInitRound;
  // A secure round's devices send no sample counts: every contributor ran the round's block.
  if (secure) rec.samples = static_cast<uint64_t>(c.members.size()) * c.local_steps;
  for (size_t i = 0; i < c.members.size(); ++i) {
    MemberReport m;
    m.device = c.members[i];
    m.examples = c.reports[i].examples > 0 ? c.reports[i].examples : secure ? c.local_steps : c.member_samples[i];
    m.loss_before = c.reports[i].loss_before;
    m.loss_after = c.reports[i].loss_after;
    m.duration_ms = c.reports[i].duration_ms;
    m.bytes_down = bytes_down_[m.device];
    m.bytes_up = bytes_up_[m.device];
    rec.reports.push_back(m);
  }
  const long n = closed_here_ + 1;  // this commit's number in this process
  if (opt_.faults != nullptr) opt_.faults->before_save(n, *store_);
  FEDRT_TRY(store_->save_round(rec, c.members, vectors));
  if (opt_.faults != nullptr) opt_.faults->after_save(n);
  events_->round_closed(rec, MsSince(t_open_));
  const size_t slot = c.id.round == protocol::kInitRound ? 0 : static_cast<size_t>(c.id.round) + 1;
  done_[c.id.algorithm * opt_.task.runs + c.id.run][slot] = 1;
  ++done_count_;
  return Status::Ok();
}

// Sends what the session queued, closes rounds (persist, then publish) and
// opens the next ones until the session waits for devices or the clock.
void FleetRounds::pump(uint64_t now_ms) {
  if (async_mode()) return async_pump(now_ms);
  if (pumping_) {
    repump_ = true;  // called back from a send (a connection closed): the outer loop goes on
    return;
  }
  pumping_ = true;
  do {
    repump_ = false;
    while (session_ != nullptr && fatal_.ok() && !stopped_ && !finished_) {
      deliver(now_ms);
      log_phases(now_ms);
      if (!session_->round_closed()) break;
      const double collect_ms = MsSince(t_open_);
      const auto t_persist = std::chrono::steady_clock::now();
      Status st = persist();
      if (!st.ok()) {
        fatal_ = st;
        CoordinatorError("fatal {}", st.message());
        break;
      }
      const double persist_ms = MsSince(t_persist);
      const protocol::Commit& c = session_->commit();
      const std::string& name = opt_.names[c.id.algorithm];
      if (!c.failure.empty())
        CoordinatorWarn("{} alg={} run={} round={} reason={}: the model stays where it was",
                       opt_.task.secagg.enabled ? "secagg_failed" : "round_failed", name, c.id.run,
                       round_name(c.id.round), c.failure);
      for (uint32_t a : c.cheaters) {
        const std::string why = fmt::format("secagg: Shamir shares off their polynomial in alg={} run={} round={}", name,
                                            c.id.run, round_name(c.id.round));
        CoordinatorWarn("secagg_cheater alg={} run={} round={} index={} dropped_shares={} (the sum is exact without them)",
                        name, c.id.run, round_name(c.id.round), a, c.off_shares);
        if (opt_.on_cheater) opt_.on_cheater(a, why);
      }
      if (c.cheaters.empty() && c.off_shares > 0)
        CoordinatorWarn("secagg alg={} run={} round={} dropped_shares={}: off their polynomial, nobody convicted "
                        "(one wrong share could be its holder's or its dealer's)",
                        name, c.id.run, round_name(c.id.round), c.off_shares);
      session_->publish();
      if (opt_.gateways != nullptr) opt_.gateways->round_published(*session_);
      deliver(now_ms);
      if (opt_.privacy != nullptr && c.id.round != protocol::kInitRound) {  // epsilon after this round
        auto eps = opt_.privacy->closed(c.id.algorithm, c.id.run, c.id.round, c.sampled, c.clip);
        if (!eps.ok()) {
          fatal_ = eps.status();
          CoordinatorError("fatal {}", fatal_.message());
          break;
        }
        events_->privacy_spent(c.id.algorithm, c.id.run, *eps);
      }
      const Traffic now_traffic = opt_.traffic != nullptr ? *opt_.traffic : Traffic{};
      CoordinatorLog("round alg={} run={} round={} agents={}/{} closed_by={} error={:.6e} bits_up={} latency_ms={:.3f} "
                     "collect_ms={:.3f} persist_ms={:.3f} rx_bytes={} tx_bytes={}",
                     name, c.id.run, round_name(c.id.round), c.members.size(), c.sampled, c.closed_by,
                     last_error_, c.bits_up, MsSince(t_open_), collect_ms, persist_ms,
                     now_traffic.in - traffic_at_open_.in, now_traffic.out - traffic_at_open_.out);
      ++closed_here_;
      if (opt_.faults != nullptr && opt_.faults->stop_after(closed_here_)) {
        CoordinatorLog("stop after_rounds={}", closed_here_);
        stopped_ = true;
        break;
      }
      st = open(now_ms);
      if (!st.ok()) {
        fatal_ = st;
        CoordinatorError("fatal {}", st.message());
      }
    }
  } while (repump_);
  pumping_ = false;
}

void FleetRounds::set_connected(uint32_t agent, bool connected, uint64_t now_ms) {
  if (agent >= agents_) return;
  connected_[agent] = connected ? 1 : 0;
  if (async_mode()) return async_connected(agent, connected, now_ms);
  if (session_ != nullptr) session_->set_connected(agent, connected, now_ms);
  if (started_) pump(now_ms);
}

void FleetRounds::set_refused(uint32_t agent, uint64_t now_ms) {
  if (agent >= agents_) return;
  refused_[agent] = 1;
  connected_[agent] = 0;
  if (async_mode()) return async_connected(agent, false, now_ms);
  if (session_ != nullptr) {
    session_->set_connected(agent, false, now_ms);
    session_->set_refused(agent, true);  // the open round stops waiting for it
  }
  if (started_) pump(now_ms);
}

protocol::Verdict FleetRounds::on_message(uint32_t agent, const wire::Envelope& env, const wire::Inbound& in,
                                          uint64_t now_ms) {
  using protocol::Refusal;
  using protocol::Verdict;
  if (async_mode()) return async_message(agent, env, in, now_ms);
  if (session_ == nullptr) return Verdict{Refusal::kFutureRound, "no round is open yet"};
  if (agent < bytes_up_.size()) {
    const uint64_t bytes = env.ByteSizeLong() + 4;
    bytes_up_[agent] += bytes;
    events_->traffic(agent, bytes, 0);
  }
  const MessageKind k = in.kind();
  const bool secure = k == MessageKind::kSecAggAdvertise || k == MessageKind::kSecAggShares ||
                      k == MessageKind::kSecAggMasked || k == MessageKind::kSecAggCheck || k == MessageKind::kSecAggUnmask;
  if (secure && opt_.faults != nullptr) opt_.faults->received(*session_, agent, env);
  const Verdict v = session_->on_message(agent, in.from_device(), now_ms);
  if (v.ok()) {
    if (secure) events_->secagg_answer(agent);
    if (((k == MessageKind::kUpdate || k == MessageKind::kChunk) && v.whole) || k == MessageKind::kSecAggMasked)
      events_->submitted(agent);
  }
  pump(now_ms);
  return v;
}

void FleetRounds::tick(uint64_t now_ms) {
  if (async_mode()) return started_ ? async_tick(now_ms) : void();
  if (session_ == nullptr || !started_) return;
  session_->tick(now_ms);
  pump(now_ms);
}

protocol::Verdict FleetRounds::on_partial(const protocol::Partial& p, uint64_t now_ms) {
  if (session_ == nullptr) return protocol::Verdict{protocol::Refusal::kFutureRound, "no round is open yet"};
  const protocol::Verdict v = session_->on_partial(p, now_ms);
  if (v.ok())
    for (uint32_t a : p.members) events_->submitted(a);
  pump(now_ms);
  return v;
}

protocol::Verdict FleetRounds::on_masked_sum(const protocol::MaskedSum& m, uint64_t now_ms) {
  if (session_ == nullptr) return protocol::Verdict{protocol::Refusal::kFutureRound, "no round is open yet"};
  const protocol::Verdict v = session_->on_masked_sum(m, now_ms);
  if (v.ok())
    for (uint32_t a : m.members) events_->submitted(a);
  pump(now_ms);
  return v;
}

void FleetRounds::add_traffic(uint32_t agent, uint64_t bytes_down, uint64_t bytes_up) {
  if (agent >= bytes_up_.size()) return;
  bytes_down_[agent] += bytes_down;
  bytes_up_[agent] += bytes_up;
}

bool FleetRounds::basis(protocol::RoundBasis& out) const {
  if (session_ == nullptr || !started_ || !session_->round_open()) return false;
  session_->basis(out);
  return true;
}

uint64_t FleetRounds::next_deadline_ms() const {
  if (async_ != nullptr) return async_next_deadline_ms();
  return session_ != nullptr && started_ ? session_->next_deadline_ms() : ServerSession::kNoDeadline;
}

Result<bool> FleetRounds::replay(uint32_t agent, const protocol::RoundId& id, wire::Envelope& out) {
  if (async_mode()) return false;  // a job in flight is lost with its connection; the device gets another
  if (id.algorithm >= opt_.task.num_algorithms || id.run >= opt_.task.runs ||
      (id.round != protocol::kInitRound && id.round >= opt_.task.rounds) || !done(id.algorithm, id.run, id.round))
    return false;
  auto rec = store_->get_round(id.algorithm, id.run, id.round, kTheta);
  if (!rec.ok()) return rec.status();
  if (!rec->has_value()) return false;
  auto member = store_->was_member(id.algorithm, id.run, id.round, agent);
  if (!member.ok()) return member.status();
  protocol::RoundResult r;
  r.id = id;
  r.included = *member;
  const bool lsa = task::FamilyOf(opt_.task.algorithms[id.algorithm].kind) == task::Family::kLsa;
  if (lsa && id.round != protocol::kInitRound)
    r.model = protocol::View<double>{(*rec)->theta.data(), static_cast<uint32_t>((*rec)->theta.size())};
  wire::Encode(r, out);
  return true;
}

}  // namespace fedrt::net
