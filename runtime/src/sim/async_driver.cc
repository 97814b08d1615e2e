#include "fedrt/sim/async_driver.h"

#include <cstring>

#include <fmt/format.h>

#include "fedrt/core/rng.h"

namespace fedrt::sim {

using protocol::ClientMessage;
using protocol::ClientSession;
using protocol::MessageKind;

namespace {
constexpr uint32_t kNoAsyncSeat = ~0u;

Status AsyncAgentError(uint32_t agent, const Status& st) {
  return Status(st.code(), fmt::format("agent {}: {}", agent, st.message()));
}
}  // namespace

Status AsyncDriver::run(const DriverOptions& o, const protocol::AsyncOptions& async,
                        const std::function<Status(const DriverRound&)>& on_step) {
  opt_ = o;
  const task::Task& task = *o.task;
  const uint32_t n = task.problem.agents;
  if (o.agents == nullptr || o.agents->size() != n) return Status::InvalidArgument("simulator: one local problem per agent");
  if (o.clock == nullptr || o.clock->agents() != n) return Status::InvalidArgument("simulator: asynchronous rounds need the virtual clock");
  if (o.gateways > 0 || o.ranks != nullptr)
    return Status::InvalidArgument("simulator: algorithm.mode = \"async\" does not combine with gateways or MPI ranks yet");
  protocol::ServerOptions so;
  so.task = task;
  so.algorithm = o.algorithm;
  so.run = o.run;
  so.initial = o.initial;
  so.max_update_norm = o.max_update_norm;
  so.standard_normal = o.standard_normal;  // central DP-FedAvg's noise
  FEDRT_TRY(server_.init(so, async));
  arena_bytes_ = (ClientSession<double>::WorkspaceBytes(task, o.algorithm) + 63) & ~size_t(63);
  for (uint32_t c = 0; c < n; ++c)
    if (const char* why = ClientSession<double>::RefusalFor(task, o.algorithm, (*o.agents)[c], arena_bytes_))
      return AsyncAgentError(c, Status::FailedPrecondition(why));
  seats_.clear();
  free_seats_.clear();
  seat_of_.assign(n, kNoAsyncSeat);
  entropy_seed_ = Mix64(task.seed ^ 0xE27E27ull);
  FEDRT_TRY(new_seat(0));  // every agent's parked bytes start as a fresh session's
  rest_bytes_ = seats_[0].session.rest_bytes();
  std::vector<uint8_t> fresh(rest_bytes_);
  seats_[0].session.park(fresh.data());
  parked_.resize(rest_bytes_ * n);
  for (uint32_t c = 0; c < n; ++c) std::memcpy(parked_.data() + rest_bytes_ * c, fresh.data(), rest_bytes_);
  free_seats_.push_back(0);
  schedule_.init(*o.clock, async.concurrency, task.seed, o.run);
  entropy_seed_ = Mix64(task.seed ^ 0xE27E27ull);
  samples_ = dispatches_ = abandoned_ = aggregated_ = staleness_sum_ = 0;
  while (server_.version() < task.rounds) {
    const AsyncSchedule::Decision d = schedule_.next();
    switch (d.kind) {
      case AsyncSchedule::Decision::Kind::kDispatch: FEDRT_TRY(dispatch(d.agent)); break;
      case AsyncSchedule::Decision::Kind::kArrive: FEDRT_TRY(arrive(d.agent, on_step)); break;
      case AsyncSchedule::Decision::Kind::kAbandon:
        server_.abandon(d.agent);
        release(d.agent);
        ++abandoned_;
        FEDRT_TRY(exchange());
        break;
      case AsyncSchedule::Decision::Kind::kEnd:
        return Status(StatusCode::kCancelled,
                      fmt::format("no device comes online again after {} of {} server steps", server_.version(), task.rounds));
    }
  }
  return Status::Ok();
}

Status AsyncDriver::new_seat(uint32_t agent) {
  Seat& s = seats_.emplace_back();
  s.arena.reset(new uint8_t[arena_bytes_]());
  Arena arena(s.arena.get(), arena_bytes_);
  const Status st = s.session.init(arena, AgentOptions(opt_, agent, &entropy_seed_));
  return st.ok() ? st : AsyncAgentError(agent, st);
}

Status AsyncDriver::dispatch(uint32_t c) {
  if (free_seats_.empty()) {
    FEDRT_TRY(new_seat(c));
    free_seats_.push_back(static_cast<uint32_t>(seats_.size() - 1));
  }
  const uint32_t k = free_seats_.back();
  free_seats_.pop_back();
  seat_of_[c] = k;
  Seat& s = seats_[k];
  s.session.unpark(c, (*opt_.agents)[c], parked_.data() + rest_bytes_ * c);
  protocol::Announcement a;
  FEDRT_TRY(server_.dispatch(c, a));
  ++dispatches_;
  Status st = s.session.on_announce(a, s.output);
  if (!st.ok()) return AsyncAgentError(c, st);
  samples_ += s.session.last_samples();
  uint64_t up = 0;
  if (s.output.kind == MessageKind::kUpdate)
    for (uint32_t i = 0; i < s.output.update.segments; ++i) up += s.output.update.payload[i].size;
  const DeviceClock& clock = *opt_.clock;
  const uint64_t down = static_cast<uint64_t>(a.model.size) * sizeof(double);
  schedule_.cost(c, clock.job_s(c, down, ExamplesRead(s.session), up));
  return Status::Ok();
}

Status AsyncDriver::arrive(uint32_t c, const std::function<Status(const DriverRound&)>& on_step) {
  Seat& s = seats_[seat_of_[c]];
  if (s.output.kind != MessageKind::kUpdate) return AsyncAgentError(c, Status::Internal("a job ended without an update"));
  const uint32_t before = server_.version();
  const protocol::Arrival got = server_.on_update(c, s.output.update);
  if (!got.verdict.ok())
    return Status(StatusCode::kInternal, fmt::format("agent {}: the server refused its update: {}", c, got.verdict.why));
  if (!got.dropped) {
    ++aggregated_;
    staleness_sum_ += got.staleness;
  }
  if (server_.holds() && !got.dropped) {  // held until its buffer's step (SecAgg+: its secure round) settles
    schedule_.hold(c);
    FEDRT_TRY(exchange());
    return server_.version() != before ? stepped(on_step) : Status::Ok();
  }
  protocol::ServerMessage m;
  m.kind = MessageKind::kRoundResult;
  m.result = server_.result(c);
  Status st = s.session.on_message(m, s.output);
  if (!st.ok()) return AsyncAgentError(c, st);
  release(c);
  if (!got.stepped) return Status::Ok();
  return stepped(on_step);
}

// SecAgg+: the server's messages to the held devices and their answers, in
// memory, until the server waits for nobody (a group settles at once here).
Status AsyncDriver::exchange() {
  protocol::Outgoing out;
  while (server_.next_outgoing(out)) {
    const uint32_t c = out.agent;
    if (seat_of_[c] == kNoAsyncSeat) continue;  // settled or gone since
    Seat& s = seats_[seat_of_[c]];
    const protocol::ServerMessage m = server_.message(out);
    Status st = s.session.on_message(m, s.output);
    if (!st.ok()) return AsyncAgentError(c, st);
    if (m.kind == MessageKind::kRoundResult) {
      release(c);
      schedule_.release(c);
      continue;
    }
    if (s.output.kind == MessageKind::kNone) continue;
    const protocol::Verdict v = server_.on_secagg(c, s.output);
    if (!v.ok()) return Status(StatusCode::kInternal, fmt::format("agent {}: the server refused its SecAgg+ message: {}", c, v.why));
  }
  return Status::Ok();
}

Status AsyncDriver::stepped(const std::function<Status(const DriverRound&)>& on_step) {
  DriverRound r;
  r.round = server_.version() - 1;
  r.core = &server_.core();
  r.commit = &server_.step();
  r.samples = samples_;
  r.time_s = schedule_.now();
  samples_ = 0;
  return on_step(r);
}

void AsyncDriver::release(uint32_t c) {
  const uint32_t k = seat_of_[c];
  if (k == kNoAsyncSeat) return;
  seats_[k].session.park(parked_.data() + rest_bytes_ * c);
  seat_of_[c] = kNoAsyncSeat;
  free_seats_.push_back(k);
}

}  // namespace fedrt::sim
