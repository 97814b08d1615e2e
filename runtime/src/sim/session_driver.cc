#include "fedrt/sim/session_driver.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/core/rng.h"
#include "fedrt/secagg/simulated_entropy.h"

namespace fedrt::sim {

using protocol::ClientMessage;
using protocol::ClientSession;
using protocol::MessageKind;
using protocol::Outgoing;

int SimulatedSecrets(void* ctx, uint64_t round_id, uint32_t u, uint8_t* out, size_t n) {
  const secagg::DeviceEntropy e = secagg::SimulatedEntropy(*static_cast<const uint64_t*>(ctx), round_id, u);
  if (n != sizeof e) return -1;
  std::memcpy(out, &e, n);
  return 0;
}

namespace {

// Distributed DP's device noise in a private run: the operating system's
// cryptographic source (getrandom), never the experiment's seed.
int OsEntropy(void*, uint64_t, uint32_t, uint8_t* out, size_t n) {
  while (n > 0) {
    const ssize_t got = getrandom(out, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    out += got;
    n -= static_cast<size_t>(got);
  }
  return 0;
}

Status AgentError(uint32_t agent, const Status& st) {
  return Status(st.code(), fmt::format("agent {}: {}", agent, st.message()));
}

}  // namespace

ClientSession<double>::Options AgentOptions(const DriverOptions& o, uint32_t agent, uint64_t* entropy_seed) {
  ClientSession<double>::Options co;
  co.task = o.task;
  co.algorithm = o.algorithm;
  co.run = o.run;
  co.agent = agent;
  co.problem = (*o.agents)[agent];
  co.entropy = SimulatedSecrets;
  co.entropy_ctx = entropy_seed;
  co.noise_entropy = OsEntropy;
  return co;
}

Status SessionDriver::run(const DriverOptions& o, const std::function<Status(const DriverRound&)>& on_round) {
  opt_ = o;
  Status st = run_rounds(on_round);
  // A rank that failed tells the others (which wait for its messages) before
  // it returns; every rank then returns the same error.
  if (!st.ok() && st.code() != StatusCode::kCancelled && o.ranks != nullptr) st = o.ranks->fail(st);
  return st;
}

Status SessionDriver::run_rounds(const std::function<Status(const DriverRound&)>& on_round) {
  const DriverOptions& o = opt_;
  const task::Task& task = *o.task;
  const uint32_t n = task.problem.agents;
  if (o.agents == nullptr || o.agents->size() != n) return Status::InvalidArgument("simulator: one local problem per agent");
  own_ = o.ranks != nullptr ? RangeOf(n, o.ranks->size(), o.ranks->rank()) : AgentRange{0, n};
  samples_shared_ = 0;
  protocol::ServerOptions so;
  so.task = task;
  so.algorithm = o.algorithm;
  so.run = o.run;
  so.initial = o.initial;
  so.standard_normal = o.standard_normal;
  so.adaptive = o.adaptive;
  so.max_update_norm = o.max_update_norm;
  so.sample_connected = o.clock != nullptr;
  FEDRT_TRY(server_.init(so));
  if (o.clock != nullptr && (o.gateways > 0 || o.ranks != nullptr))
    return Status::InvalidArgument("simulator: [devices] (the virtual clock) does not combine with gateways or MPI ranks yet");
  now_s_ = round_end_ = 0;
  if (o.gateways > 0 && o.ranks != nullptr)
    return Status::InvalidArgument("simulator: gateways and MPI ranks do not combine (run one process)");
  FEDRT_TRY(hub_.init(so, o.gateways));
  entropy_seed_ = Mix64(task.seed ^ 0xE27E27ull);
  arena_bytes_ = (ClientSession<double>::WorkspaceBytes(task, o.algorithm) + 63) & ~size_t(63);
  for (uint32_t c = 0; c < n; ++c) server_.set_connected(c, true, 0);
  for (uint32_t c = own_.lo; c < own_.hi; ++c)
    if (const char* why = ClientSession<double>::RefusalFor(task, o.algorithm, (*o.agents)[c], arena_bytes_))
      return AgentError(c, Status::FailedPrecondition(why));
  seats_.clear();
  idle_seats_.clear();
  serial_ = 1;
  seat_of_.assign(own_.count(), kUnseated);
  parked_.clear();
  rest_bytes_ = 0;
  if (o.park_idle_agents && own_.count() > 0) {  // every agent's parked bytes start as a fresh session's
    FEDRT_TRY(seat(own_.lo));
    rest_bytes_ = seat_of(own_.lo).session.rest_bytes();
    std::vector<uint8_t> fresh(rest_bytes_);
    seat_of(own_.lo).session.park(fresh.data());
    parked_.resize(rest_bytes_ * own_.count());
    for (uint32_t i = 0; i < own_.count(); ++i) std::memcpy(parked_.data() + rest_bytes_ * i, fresh.data(), rest_bytes_);
    seats_[0].agent = kUnseated;
    seats_[0].round = 0;
    seat_of_[0] = kUnseated;
    idle_seats_.push_back(0);
  } else {
    for (uint32_t c = own_.lo; c < own_.hi; ++c) FEDRT_TRY(seat(c));
  }
  dropped_.assign(n, 0);
  auto finish = [&](uint32_t round) -> Status {
    DriverRound r;
    r.round = round;
    r.server = &server_;
    r.core = &server_.core();
    r.commit = &server_.commit();
    r.samples = samples_;
    now_s_ = round_end_;
    r.time_s = now_s_;
    FEDRT_TRY(on_round(r));
    server_.publish();
    if (hub_.on()) hub_.settle(server_);
    Outgoing out;
    while (server_.next_outgoing(out)) {  // a parked agent holds no update: its result changes nothing
      if (out.kind != MessageKind::kRoundResult || !own_.owns(out.agent) || !seated(out.agent)) continue;
      protocol::ServerSession& from = hub_.partial_round() ? hub_.gateway_of(out.agent) : server_;
      Status st = seat_of(out.agent).session.on_message(from.message(out, 0), seat_of(out.agent).output);
      if (!st.ok()) return AgentError(out.agent, st);
    }
    if (opt_.park_idle_agents) {  // every seat may serve the next round
      ++serial_;
      idle_seats_.clear();
      for (uint32_t i = 0; i < seats_.size(); ++i) idle_seats_.push_back(i);
    }
    return Status::Ok();
  };
  if (server_.needs_initial_exchange()) {
    FEDRT_TRY(play_round(protocol::kInitRound));
    FEDRT_TRY(finish(protocol::kInitRound));
  }
  for (uint32_t t = 0; t < task.rounds; ++t) {
    FEDRT_TRY(play_round(t));
    FEDRT_TRY(finish(t));
  }
  return Status::Ok();
}

Status SessionDriver::play_round(uint32_t round) {
  const task::Task& task = *opt_.task;
  const uint32_t n = task.problem.agents;
  for (uint32_t c = 0; c < n; ++c)
    if (dropped_[c] || opt_.clock != nullptr) {
      dropped_[c] = 0;
      server_.set_connected(c, opt_.clock == nullptr || opt_.clock->online(c, now_s_), 0);
    }
  round_end_ = now_s_;
  FEDRT_TRY(server_.open_round(round, 0));
  if (opt_.clock != nullptr && server_.round_closed() && round != protocol::kInitRound) {
    const double next = opt_.clock->next_change(now_s_);  // nobody sampled online: time passes to the next change
    if (next != DeviceClock::kNever) round_end_ = next;
  }
  if (hub_.on()) FEDRT_TRY(hub_.open(server_, round));
  samples_ = 0;
  samples_shared_ = 0;
  // Simulated SecAgg+ dropouts: floor(dropout n) of the round's n sampled
  // devices (a keyed shuffle of their ids) vanish before their masked input.
  std::vector<char> vanish;  // n flags, allocated only when there are dropouts
  if (task.secagg.enabled && task.secagg.dropout > 0.0 && round != protocol::kInitRound) {
    vanish.assign(n, 0);
    std::vector<uint32_t> sampled;
    for (uint32_t c = 0; c < n; ++c)
      if (server_.sampled(c)) sampled.push_back(c);
    const uint32_t m = static_cast<uint32_t>(sampled.size());
    std::vector<uint32_t> order(m);
    for (uint32_t i = 0; i < m; ++i) order[i] = i;
    CounterRng rng(Mix64(task.seed ^ 0xD209D209ull), opt_.run, 0, round, RngStream::kParticipation);
    for (uint32_t i = m - 1; m > 0 && i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    const uint32_t k = static_cast<uint32_t>(task.secagg.dropout * m);
    for (uint32_t i = 0; i < k; ++i) vanish[sampled[order[i]]] = 1;
  }
  for (int idle = 0; !server_.round_closed();) {
    Outgoing out;
    batch_.clear();
    bool delivered = false;
    while (server_.next_outgoing(out)) {
      delivered = true;
      if (out.kind == MessageKind::kAnnouncement) {
        if (opt_.ranks != nullptr) announced_.push_back(out.agent);
        if (own_.owns(out.agent)) batch_.push_back(out.agent);
        continue;
      }
      // Every replica reads the server's message; the agent's owner answers it.
      const bool mine = own_.owns(out.agent);
      if (mine) FEDRT_TRY(seat(out.agent));
      ClientSession<double>* client = mine ? &seat_of(out.agent).session : nullptr;
      ClientMessage* reply = mine ? &seat_of(out.agent).output : nullptr;
      if (out.kind == MessageKind::kRoundResult) continue;  // results are finish()'s, after publish()
      const protocol::ServerMessage m = server_.message(out, 0);
      if (m.kind == MessageKind::kNone) continue;
      if (hub_.on()) hub_.relayed(server_, out.agent, m.kind);
      if (m.kind == MessageKind::kSecAggSharesIn && !vanish.empty() && vanish[out.agent]) {
        dropped_[out.agent] = 1;  // it received its shares, then vanished before its masked input
        server_.set_connected(out.agent, false, 0);
        if (hub_.on()) hub_.dropped(out.agent);
        continue;
      }
      const Status st = mine ? client->on_message(m, *reply) : Status::Ok();
      if (!st.ok()) return AgentError(out.agent, st);
      if (opt_.ranks != nullptr) messages_.expect(out.agent);
      if (mine) FEDRT_TRY(feed(out.agent, *reply));
    }
    if (!batch_.empty()) FEDRT_TRY(deliver_announcements(round));
    if (opt_.ranks != nullptr && delivered) FEDRT_TRY(exchange());
    if (!delivered && !server_.round_closed() && opt_.clock != nullptr) {
      server_.expire(0);  // the virtual clock's deadline: every member in time has answered
      continue;
    }
    if (!delivered && !server_.round_closed()) {
      if (++idle > 1) return Status::Internal("simulator: a round waits for messages no agent will send");
      if (hub_.on()) FEDRT_TRY(hub_.tick(server_));
      if (!server_.round_closed()) server_.tick(protocol::ServerSession::kNoDeadline - 1);
    }
  }
  return Status::Ok();
}

Status SessionDriver::seat(uint32_t c) {
  uint32_t& s = seat_of_[c - own_.lo];
  if (s != kUnseated) {
    seats_[s].round = serial_;
    return Status::Ok();
  }
  const problems::LocalProblem<double>& problem = (*opt_.agents)[c];
  uint32_t k = kUnseated;
  while (k == kUnseated && !idle_seats_.empty()) {  // a seat this round has not used
    const uint32_t i = idle_seats_.back();
    idle_seats_.pop_back();
    if (seats_[i].round != serial_) k = i;
  }
  if (k == kUnseated) {  // every seat serves this round: a new session, carved from its own arena
    Seat& fresh = seats_.emplace_back();
    fresh.arena.reset(new uint8_t[arena_bytes_]());
    Arena arena(fresh.arena.get(), arena_bytes_);
    Status st = fresh.session.init(arena, AgentOptions(opt_, c, &entropy_seed_));
    if (!st.ok()) return AgentError(c, st);
    k = static_cast<uint32_t>(seats_.size() - 1);
  } else if (const uint32_t old = seats_[k].agent; old != kUnseated) {  // its agent goes back to its parked bytes
    seats_[k].session.park(parked_.data() + rest_bytes_ * (old - own_.lo));
    seat_of_[old - own_.lo] = kUnseated;
  }
  Seat& seat = seats_[k];
  seat.agent = c;
  seat.round = serial_;
  s = k;
  if (!parked_.empty()) seat.session.unpark(c, problem, parked_.data() + rest_bytes_ * (c - own_.lo));
  return Status::Ok();
}

Status SessionDriver::deliver_announcements(uint32_t round) {
  for (uint32_t c : batch_) FEDRT_TRY(seat(c));
  const protocol::Announcement a0 = announcement(batch_[0]);
  const double work = static_cast<double>(batch_.size()) * std::max<uint32_t>(1, a0.local_steps) * opt_.work_per_sample;
  auto work_on = [&](size_t b, size_t e) { announce_range(b, e); };
  if (opt_.pool != nullptr && work >= opt_.min_parallel_work && batch_.size() > 1) opt_.pool->parallel_for(batch_.size(), work_on);
  else work_on(0, batch_.size());
  for (uint32_t c : batch_) {  // fixed agent order
    Seat& s = seat_of(c);
    if (!s.error.ok()) return AgentError(c, s.error);
    samples_ += s.session.last_samples();
    if (opt_.clock != nullptr && round != protocol::kInitRound && !in_time(c, s.output, ExamplesRead(s.session))) continue;
    FEDRT_TRY(feed(c, s.output));
  }
  return Status::Ok();
}

bool SessionDriver::in_time(uint32_t c, const ClientMessage& answer, uint64_t samples) {
  const DeviceClock& clock = *opt_.clock;
  const protocol::Announcement a = announcement(c);
  uint64_t down = static_cast<uint64_t>(a.model.size) * sizeof(double), up = 0;
  for (uint32_t k = 0; k < task::kMaxSegments; ++k) down += a.delta[k].size;
  if (answer.kind == MessageKind::kUpdate) {
    for (uint32_t k = 0; k < answer.update.segments; ++k) up += answer.update.payload[k].size;
  } else {  // a secure round: the masked input, chains x segment_dim b-bit fields
    const protocol::ServerCore& core = server_.core();
    up = static_cast<uint64_t>(core.chains()) * static_cast<uint64_t>(core.segment_dim()) *
         opt_.task->compression.quantizer.bits / 8;
  }
  const double done = now_s_ + clock.job_s(c, down, samples, up);
  const double leaves = clock.online_until(c, now_s_);
  const double deadline = opt_.deadline_s > 0 ? now_s_ + opt_.deadline_s : DeviceClock::kNever;
  if (done <= deadline && done <= leaves) {
    round_end_ = std::max(round_end_, done);
    return true;
  }
  round_end_ = std::max(round_end_, std::min(deadline, leaves));  // the round waits for it until then
  server_.set_connected(c, false, 0);
  return false;
}

// Local work of batch_[b, e): TD(0) blocks go to the lane kernel in groups of
// kTdLaneGroup agents (each agent's result is the scalar kernel's, bit for
// bit); any other work runs through on_announce.
void SessionDriver::announce_range(size_t b, size_t e) {
  if (opt_.kernel == config::TdKernel::kScalar) {
    for (size_t i = b; i < e; ++i) {
      Seat& s = seat_of(batch_[i]);
      s.error = s.session.on_announce(announcement(batch_[i]), s.output);
    }
    return;
  }
  problems::TdBlock<double> blocks[kTdLaneGroup];
  protocol::Announcement announced[kTdLaneGroup];
  Seat* owner[kTdLaneGroup];
  size_t n = 0;
  auto flush = [&] {
    RunTdBlocks(blocks, n, opt_.kernel);
    for (size_t k = 0; k < n; ++k) owner[k]->error = owner[k]->session.finish_announce(announced[k], owner[k]->output);
    n = 0;
  };
  for (size_t i = b; i < e; ++i) {
    const uint32_t c = batch_[i];
    Seat& s = seat_of(c);
    const protocol::Announcement a = announcement(c);
    bool deferred = false;
    s.error = s.session.begin_announce(a, blocks[n], deferred);
    if (!s.error.ok()) continue;
    if (!deferred) {
      s.error = s.session.on_announce(a, s.output);
      continue;
    }
    announced[n] = a;
    owner[n++] = &s;
    if (n == kTdLaneGroup) flush();
  }
  if (n > 0) flush();
}

// Distributed: the server replicas take every agent's message in the
// single-process order (the announced agents after the others, as
// deliver_announcements feeds them after the drain), whoever owns the agent.
Status SessionDriver::exchange() {
  for (uint32_t c : announced_) messages_.expect(c);
  announced_.clear();
  uint64_t all = 0;
  FEDRT_TRY(messages_.exchange(*opt_.ranks, opt_.task->problem.agents, samples_ - samples_shared_, all,
                               [this](uint32_t agent, const ClientMessage& m) { return send(agent, m); }));
  samples_ = samples_shared_ + all;
  samples_shared_ = samples_;
  return Status::Ok();
}

Status SessionDriver::feed(uint32_t agent, const ClientMessage& out) {
  if (opt_.ranks != nullptr) return messages_.put(agent, out);  // sent to the server by exchange()
  return send(agent, out);
}

Status SessionDriver::send(uint32_t agent, const ClientMessage& out) {
  if (out.kind == MessageKind::kNone) return Status::Ok();
  if (hub_.on()) return hub_.deliver(agent, out, server_);
  const protocol::Verdict v = server_.on_message(agent, out, 0);
  if (!v.ok()) return Status(StatusCode::kInternal, fmt::format("agent {}: the server refused its message: {}", agent, v.why));
  return Status::Ok();
}

}  // namespace fedrt::sim
