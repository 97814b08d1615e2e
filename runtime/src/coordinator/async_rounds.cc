// FleetRounds under algorithm.mode = "async" (docs/async.md): each
// (algorithm, run) is task.rounds server steps of a protocol::AsyncServer.
// In real time a connected device without a job gets one while a slot is
// free (first come, first served) and every update is taken as it arrives.
// Under the virtual clock the simulator's AsyncSchedule decides who gets a
// job and in which order updates arrive: one job is out in real time, its
// update is held until its virtual arrival, so the steps are fedrt-sim's.
// Every step is committed like a round (its time_s with it) before its
// members learn their results.
#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "fedrt/coordinator/fleet_rounds.h"
#include "fedrt/coordinator/log.h"
#include "fedrt/protocol/async_server.h"
#include "fedrt/sim/async_schedule.h"
#include "fedrt/sim/device_clock.h"

namespace fedrt::net {

using protocol::ServerSession;

namespace {
constexpr uint32_t kNobody = ~0u;

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

struct FleetRounds::AsyncRun {
  uint32_t algorithm = 0, run = 0;
  protocol::AsyncServer server;
  std::optional<sim::DeviceClock> clock;  // the virtual clock's (null in real time)
  sim::AsyncSchedule schedule;
  uint32_t awaiting = kNobody;  // virtual clock: dispatched, its update not in yet
  bool awaiting_sent = false;   // ... and its announcement went out (it was connected)
  protocol::Announcement announcement;  // the awaited job's (its model is the core's, unchanged until a step)
  std::vector<std::unique_ptr<wire::Envelope>> held;  // virtual clock: updates until their arrival
  std::deque<uint32_t> ready;  // real time: connected devices without a job, in arrival order
  std::vector<char> queued;
  std::vector<uint64_t> job_down, job_up;  // frame bytes of each device's current job
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double step_time_s = 0;
  // Each job's deadline (network.deadline_ms after its dispatch): a device
  // that never answers gives its slot back then. Entries of jobs already
  // settled are skipped when they come up.
  struct Due {
    uint64_t at_ms;
    uint32_t agent, job;
    bool operator>(const Due& o) const { return at_ms > o.at_ms; }
  };
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due;
  std::vector<char> timed_out_before;  // per device: a timeout was logged (logged once per device)
  uint32_t persisted = 0;              // steps committed to the state db
  uint64_t phase_due_ms = 0;           // SecAgg+: the open phase's deadline (0: none)
  uint64_t timeouts = 0;
};

FleetRounds::FleetRounds() = default;
FleetRounds::~FleetRounds() = default;

bool FleetRounds::async_owes(uint32_t agent) const {
  return async_ != nullptr && agent < agents_ && async_->server.busy(agent);
}

Status FleetRounds::async_open() {
  const Slot s = next_slot();
  async_.reset();
  if (!s.valid) {
    finished_ = true;
    return Status::Ok();
  }
  if (s.round != 0)
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("state db holds steps of {} run {} up to {}: an asynchronous run does not resume (its "
                              "jobs in flight are not in the state); use a fresh --state file",
                              opt_.names[s.algorithm], s.run, s.round));
  auto run = std::make_unique<AsyncRun>();
  run->algorithm = s.algorithm;
  run->run = s.run;
  protocol::ServerOptions so;
  so.task = opt_.task;
  so.algorithm = s.algorithm;
  so.run = s.run;
  so.initial = opt_.initial;
  so.max_update_norm = opt_.max_update_norm;
  if (opt_.privacy != nullptr) so.standard_normal = opt_.privacy->noise(s.algorithm, s.run, 0, opt_.initial.size);
  protocol::AsyncOptions ao;
  ao.buffer = static_cast<uint32_t>(opt_.async->buffer);
  ao.concurrency = static_cast<uint32_t>(opt_.async->concurrency);
  ao.max_staleness = static_cast<uint32_t>(opt_.async->max_staleness);
  ao.staleness_exponent = opt_.async->staleness_exponent;
  ao.steps = rounds_per_run(s.run);
  FEDRT_TRY(run->server.init(so, ao));
  if (opt_.virtual_clock) {
    static const config::DevicesSettings kDefault;
    auto clock = sim::DeviceClock::Build(opt_.devices != nullptr ? *opt_.devices : kDefault, agents_, opt_.task.seed);
    if (!clock.ok()) return clock.status();
    run->clock = std::move(*clock);
    run->schedule.init(*run->clock, ao.concurrency, opt_.task.seed, s.run);
    run->held.resize(agents_);
  }
  run->queued.assign(agents_, 0);
  for (uint32_t c = 0; c < agents_; ++c)
    if (connected_[c] && !refused_[c]) {
      run->ready.push_back(c);
      run->queued[c] = 1;
    }
  run->timed_out_before.assign(agents_, 0);
  run->job_down.assign(agents_, 0);
  run->job_up.assign(agents_, 0);
  CoordinatorLog("async alg={} run={} steps={} buffer={} concurrency={} max_staleness={} staleness_exponent={}{}",
                 opt_.names[s.algorithm], s.run, opt_.task.rounds, ao.buffer, ao.concurrency, ao.max_staleness,
                 ao.staleness_exponent, opt_.virtual_clock ? " clock=virtual" : "");
  events_->round_opened(protocol::RoundId{s.algorithm, s.run, 0}, ao.buffer);
  async_ = std::move(run);
  return Status::Ok();
}

Status FleetRounds::async_dispatch(uint32_t c, uint64_t now_ms) {
  AsyncRun& a = *async_;
  protocol::Announcement ann;
  FEDRT_TRY(a.server.dispatch(c, ann));
  wire::Envelope env;
  wire::Encode(ann, env);
  a.job_down[c] = env.ByteSizeLong() + 4;  // + the frame's length prefix
  a.job_up[c] = 0;
  events_->traffic(c, 0, a.job_down[c]);
  events_->announced(c);
  if (opt_.deadline_ms > 0) a.due.push(AsyncRun::Due{now_ms + opt_.deadline_ms, c, ann.id.round});
  if (opt_.virtual_clock) {
    a.awaiting = c;
    a.announcement = ann;
    a.awaiting_sent = connected_[c] != 0;
    if (!a.awaiting_sent) return Status::Ok();  // sent when it connects
  }
  send_(c, env);
  return Status::Ok();
}

void FleetRounds::async_result(uint32_t c) {
  wire::Envelope env;
  wire::Encode(async_->server.result(c), env);
  send_(c, env);
}

void FleetRounds::async_pump(uint64_t now_ms) {
  if (pumping_) {
    repump_ = true;
    return;
  }
  pumping_ = true;
  Status st = Status::Ok();
  do {
    repump_ = false;
    while (st.ok() && async_ != nullptr && !finished_ && !stopped_) {
      AsyncRun& a = *async_;
      if (a.server.version() >= rounds_per_run(a.run) ||
          (opt_.privacy != nullptr && opt_.privacy->stopped(a.algorithm, a.run))) {  // done: jobs out are dropped
        for (uint32_t c = 0; c < agents_; ++c)
          if (a.server.busy(c)) {  // a job out, or a receipt held: not in any step now
            if (a.server.has_job(c)) a.server.abandon(c);
            async_result(c);
          }
        st = async_open();
        continue;
      }
      if (!opt_.virtual_clock) {
        while (st.ok() && a.server.slot_free() && !a.ready.empty()) {
          const uint32_t c = a.ready.front();
          a.ready.pop_front();
          a.queued[c] = 0;
          if (connected_[c] && !refused_[c] && !a.server.busy(c)) st = async_dispatch(c, now_ms);
        }
        break;
      }
      if (a.server.group_open()) break;  // SecAgg+: the group settles in real time before virtual time goes on
      if (a.awaiting != kNobody) {  // one job out in real time: wait for its update
        if (!a.awaiting_sent && connected_[a.awaiting]) {
          wire::Envelope env;
          wire::Encode(a.announcement, env);
          send_(a.awaiting, env);
          a.awaiting_sent = true;
        }
        break;
      }
      const sim::AsyncSchedule::Decision d = a.schedule.next();
      using Kind = sim::AsyncSchedule::Decision::Kind;
      if (d.kind == Kind::kDispatch) {
        st = async_dispatch(d.agent, now_ms);
      } else if (d.kind == Kind::kArrive) {
        std::unique_ptr<wire::Envelope> env = std::move(a.held[d.agent]);
        wire::Inbound in;
        wire::WireError err;
        if (env == nullptr || !in.decode(*env, err) || in.kind() != protocol::MessageKind::kUpdate) {
          st = Status(StatusCode::kInternal, fmt::format("async: device index {} arrives without its held update", d.agent));
          break;
        }
        a.step_time_s = d.t;
        st = async_arrive(d.agent, in.update(), now_ms);
      } else if (d.kind == Kind::kAbandon) {
        a.server.abandon(d.agent);
        a.held[d.agent].reset();
        async_result(d.agent);  // not included: the device drops its update
        st = async_settle(now_ms);
      } else {
        st = Status(StatusCode::kFailedPrecondition,
                    fmt::format("async alg={} run={}: no device comes online again after {} of {} steps ([devices] "
                                "availability)",
                                opt_.names[a.algorithm], a.run, a.server.version(), opt_.task.rounds));
      }
    }
  } while (repump_ && st.ok());
  pumping_ = false;
  if (!st.ok() && fatal_.ok()) {
    fatal_ = st;
    CoordinatorError("fatal {}", st.message());
  }
}

void FleetRounds::async_connected(uint32_t c, bool connected, uint64_t now_ms) {
  if (async_ == nullptr) return;
  AsyncRun& a = *async_;
  if (!connected || refused_[c]) {
    // Real time: its job is lost (a restarted device gets a new one). Under
    // the virtual clock a job ends only when the schedule says so: a device
    // that comes back resends its update for the job it holds.
    if (!opt_.virtual_clock && a.server.busy(c)) {
      a.server.abandon(c);  // SecAgg+: a held receipt leaves its buffer, a group member drops out
      const Status st = async_settle(now_ms);
      if (!st.ok() && fatal_.ok()) fatal_ = st;
    }
  } else if (!a.queued[c] && !a.server.busy(c)) {
    a.ready.push_back(c);
    a.queued[c] = 1;
  } else if (opt_.virtual_clock && a.awaiting == c) {
    a.awaiting_sent = false;  // (re)send its announcement
  }
  if (started_) async_pump(now_ms);
}

protocol::Verdict FleetRounds::async_message(uint32_t c, const wire::Envelope& env, const wire::Inbound& in,
                                             uint64_t now_ms) {
  using protocol::Refusal;
  using protocol::Verdict;
  if (async_ == nullptr) return Verdict{Refusal::kFutureRound, "no asynchronous run is open"};
  AsyncRun& a = *async_;
  using protocol::MessageKind;
  const MessageKind k = in.kind();
  if (k == MessageKind::kSecAggAdvertise || k == MessageKind::kSecAggShares || k == MessageKind::kSecAggMasked ||
      k == MessageKind::kSecAggCheck || k == MessageKind::kSecAggUnmask) {  // the held device's group
    const uint64_t bytes = env.ByteSizeLong() + 4;
    a.job_up[c] += bytes;
    events_->traffic(c, bytes, 0);
    const Verdict v = a.server.on_secagg(c, in.from_device());
    if (v.ok()) events_->secagg_answer(c);
    const Status st = async_settle(now_ms);
    if (!st.ok() && fatal_.ok()) {
      fatal_ = st;
      CoordinatorError("fatal {}", st.message());
    }
    async_pump(now_ms);
    return v;
  }
  if (k != MessageKind::kUpdate)
    return Verdict{Refusal::kMalformed, "an asynchronous run takes whole updates and SecAgg+ messages only (no chunks)"};
  const protocol::Update& u = in.update();
  if (u.id.algorithm != a.algorithm || u.id.run != a.run || !a.server.has_job(c) || u.id.round != a.server.result(c).id.round) {
    if (!opt_.virtual_clock && connected_[c] && !refused_[c] && !a.server.busy(c) && !a.queued[c]) {
      a.ready.push_back(c);  // a job it answered too late: it may take another
      a.queued[c] = 1;
      async_pump(now_ms);
    }
    return Verdict{Refusal::kStaleRound, fmt::format("job {} is not one this device holds", u.id.round)};
  }
  const uint64_t bytes = env.ByteSizeLong() + 4;
  a.job_up[c] += bytes;
  events_->traffic(c, bytes, 0);
  events_->submitted(c);
  Verdict v;
  v.whole = true;
  if (opt_.virtual_clock) {  // held until the schedule says it arrives
    if (a.awaiting != c) return Verdict{Refusal::kDuplicate, "this job's update is already in"};
    uint64_t up = 0;
    for (uint32_t k = 0; k < u.segments; ++k) up += u.payload[k].size;
    const sim::DeviceClock& clock = *a.clock;
    const uint64_t examples = u.report.examples > 0 ? u.report.examples : u.sample_count;
    const uint64_t down = static_cast<uint64_t>(a.announcement.model.size) * sizeof(double);
    a.schedule.cost(c, clock.job_s(c, down, examples, up));
    a.held[c] = std::make_unique<wire::Envelope>(env);
    a.awaiting = kNobody;
  } else {
    a.step_time_s = SecondsSince(a.t0);
    const Status st = async_arrive(c, u, now_ms);
    if (!st.ok()) {
      if (st.code() == StatusCode::kInvalidArgument) return Verdict{Refusal::kMalformed, st.message()};
      fatal_ = st;
      CoordinatorError("fatal {}", st.message());
    }
    if (connected_[c] && !a.queued[c] && !a.server.busy(c)) {
      a.ready.push_back(c);
      a.queued[c] = 1;
    }
  }
  async_pump(now_ms);
  return v;
}

uint64_t FleetRounds::async_next_deadline_ms() const {
  if (async_ == nullptr) return ServerSession::kNoDeadline;
  AsyncRun& a = *async_;
  while (!a.due.empty() && (!a.server.has_job(a.due.top().agent) || a.server.result(a.due.top().agent).id.round != a.due.top().job))
    a.due.pop();  // settled before its deadline
  const uint64_t job = a.due.empty() ? ServerSession::kNoDeadline : a.due.top().at_ms;
  return a.server.group_open() && a.phase_due_ms > 0 ? std::min(job, a.phase_due_ms) : job;
}

// Jobs past their deadline give their slots back; the device's update, if it
// ever comes, is refused as stale.
void FleetRounds::async_tick(uint64_t now_ms) {
  if (async_ == nullptr) return;
  AsyncRun& a = *async_;
  if (a.server.group_open() && a.phase_due_ms > 0 && a.phase_due_ms <= now_ms) {  // a SecAgg+ phase's deadline
    if (opt_.virtual_clock) {
      fatal_ = Status(StatusCode::kDeadlineExceeded,
                      fmt::format("--virtual-clock: a SecAgg+ phase of step {} was not answered by every member within "
                                  "deadline_ms={}: a reproducible run needs every device to answer",
                                  a.server.version() + 1, opt_.deadline_ms));
      CoordinatorError("fatal {}", fatal_.message());
      return;
    }
    a.phase_due_ms = 0;
    a.server.expire_phase();  // the phase closes with the members that answered (SecAgg+ dropouts)
    const Status st = async_settle(now_ms);
    if (!st.ok()) {
      fatal_ = st;
      CoordinatorError("fatal {}", st.message());
      return;
    }
  }
  while (!a.due.empty() && async_next_deadline_ms() <= now_ms && a.due.top().at_ms <= now_ms) {
    const AsyncRun::Due d = a.due.top();
    a.due.pop();
    if (opt_.virtual_clock) {
      fatal_ = Status(StatusCode::kDeadlineExceeded,
                      fmt::format("--virtual-clock: device index {} did not answer job {} within deadline_ms={}: a "
                                  "reproducible run needs every device to answer",
                                  d.agent, d.job, opt_.deadline_ms));
      CoordinatorError("fatal {}", fatal_.message());
      return;
    }
    a.server.abandon(d.agent);
    async_result(d.agent);
    ++a.timeouts;
    if (!a.timed_out_before[d.agent]) {
      a.timed_out_before[d.agent] = 1;
      CoordinatorWarn("job_timeout alg={} run={} device_index={} job={} deadline_ms={}: its slot goes to another "
                      "device (logged once per device)",
                      opt_.names[a.algorithm], a.run, d.agent, d.job, opt_.deadline_ms);
    }
  }
  async_pump(now_ms);
}

// One arrival: the server weighs it (or drops it as too stale); a full
// buffer's step is committed before the device learns its result.
Status FleetRounds::async_arrive(uint32_t c, const protocol::Update& u, uint64_t now_ms) {
  AsyncRun& a = *async_;
  const protocol::Arrival got = a.server.on_update(c, u);
  if (!got.verdict.ok()) {
    a.server.abandon(c);
    async_result(c);
    return Status(StatusCode::kInvalidArgument, got.verdict.why);
  }
  if (got.dropped)
    CoordinatorLog("stale alg={} run={} device_index={} staleness={} > max_staleness={}: dropped",
                   opt_.names[a.algorithm], a.run, c, got.staleness, a.server.options().max_staleness);
  if (a.server.holds() && !got.dropped) {  // held until its buffer's step (SecAgg+: its group) settles
    if (opt_.virtual_clock) a.schedule.hold(c);
    return async_settle(now_ms);
  }
  FEDRT_TRY(async_settle(now_ms));
  async_result(c);
  return Status::Ok();
}

// After any call into the server: a step it took is committed first, then
// what it queued (SecAgg+ phases, the group's results) goes out.
Status FleetRounds::async_settle(uint64_t now_ms) {
  AsyncRun& a = *async_;
  if (a.server.version() > a.persisted) {
    FEDRT_TRY(async_persist());
    a.persisted = a.server.version();
  }
  protocol::Outgoing out;
  bool secure_sent = false;
  while (a.server.next_outgoing(out)) {
    const protocol::ServerMessage m = a.server.message(out);
    wire::Envelope env;
    if (!wire::Encode(m, env)) continue;
    const uint64_t bytes = env.ByteSizeLong() + 4;
    a.job_down[out.agent] += bytes;
    events_->traffic(out.agent, 0, bytes);
    send_(out.agent, env);
    if (m.kind != protocol::MessageKind::kRoundResult) {
      secure_sent = true;
      continue;
    }
    const uint32_t c = out.agent;  // settled: free for another job
    if (opt_.virtual_clock) a.schedule.release(c);
    else if (connected_[c] && !refused_[c] && !a.server.busy(c) && !a.queued[c]) {
      a.ready.push_back(c);
      a.queued[c] = 1;
    }
  }
  if (secure_sent && opt_.deadline_ms > 0) a.phase_due_ms = now_ms + opt_.deadline_ms;
  return Status::Ok();
}

Status FleetRounds::async_persist() {
  AsyncRun& a = *async_;
  const protocol::Commit& c = a.server.step();
  const protocol::ServerCore& core = a.server.core();
  RoundRecord rec = record_of(c, core);  // c.id.round is the step's version before it
  RoundVectors vectors;
  vectors.theta.push_back({core.model(), static_cast<size_t>(core.dim())});
  core.state_slices(vectors.state);
  rec.time_s = a.step_time_s;
  // A fast device can have two updates in one buffer: the state db lists
  // it once, with its examples and bytes summed (rec.agents counts updates).
  std::vector<uint32_t> members;
  for (size_t i = 0; i < c.members.size(); ++i) {
    const uint32_t d = c.members[i];
    const uint64_t examples = c.reports[i].examples > 0 ? c.reports[i].examples : c.member_samples[i];
    auto seen = std::find(members.begin(), members.end(), d);
    if (seen != members.end()) {
      rec.reports[static_cast<size_t>(seen - members.begin())].examples += examples;
      continue;
    }
    members.push_back(d);
    MemberReport m;
    m.device = d;
    m.examples = examples;
    m.loss_before = c.reports[i].loss_before;
    m.loss_after = c.reports[i].loss_after;
    m.duration_ms = c.reports[i].duration_ms;
    m.bytes_down = a.job_down[d];
    m.bytes_up = a.job_up[d];
    rec.reports.push_back(m);
  }
  const long n = closed_here_ + 1;
  if (opt_.faults != nullptr) opt_.faults->before_save(n, *store_);
  FEDRT_TRY(store_->save_round(rec, members, vectors));
  if (opt_.faults != nullptr) opt_.faults->after_save(n);
  events_->round_closed(rec, 0.0);
  done_[a.algorithm * opt_.task.runs + a.run][static_cast<size_t>(rec.round) + 1] = 1;
  ++done_count_;
  ++closed_here_;
  uint32_t max_s = 0;
  double mean_s = 0;
  std::string based_on;  // the model version each update was trained on
  for (uint32_t s : a.server.step_staleness()) {
    max_s = std::max(max_s, s);
    mean_s += s;
    based_on += fmt::format("{}{}", based_on.empty() ? "" : ",", rec.round - s);
  }
  if (!a.server.step_staleness().empty()) mean_s /= static_cast<double>(a.server.step_staleness().size());
  CoordinatorLog("step alg={} run={} step={} agents={} based_on={} staleness_mean={:.2f} staleness_max={} error={:.6e} "
                 "time_s={:.3f} bits_up={}",
                 opt_.names[a.algorithm], a.run, rec.round + 1, rec.agents, based_on, mean_s, max_s, last_error_,
                 rec.time_s, c.bits_up);
  if (opt_.faults != nullptr && opt_.faults->stop_after(closed_here_)) {
    CoordinatorLog("stop after_rounds={}", closed_here_);
    stopped_ = true;
  }
  if (opt_.privacy != nullptr) {  // epsilon after this step, composed without amplification
    auto eps = opt_.privacy->closed(a.algorithm, a.run, rec.round, c.sampled);
    if (!eps.ok()) return eps.status();
    events_->privacy_spent(a.algorithm, a.run, *eps);
  }
  events_->round_opened(protocol::RoundId{a.algorithm, a.run, a.server.version()}, a.server.options().buffer);
  return Status::Ok();
}

}  // namespace fedrt::net
