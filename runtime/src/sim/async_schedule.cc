#include "fedrt/sim/async_schedule.h"

#include <algorithm>

#include "fedrt/core/rng.h"

namespace fedrt::sim {

void AsyncSchedule::init(const DeviceClock& clock, uint32_t concurrency, uint64_t seed, uint32_t run) {
  clock_ = &clock;
  concurrency_ = concurrency;
  seed_ = Mix64(seed ^ 0xA5C0A5C0ull);
  run_ = run;
  now_ = 0;
  out_ = 0;
  seq_ = events_ = dispatches_ = 0;
  awaiting_cost_ = false;
  heap_ = {};
  const uint32_t n = clock.agents();
  pool_.clear();
  pos_.assign(n, kNone);
  job_.assign(n, kNone);
  held_.assign(n, 0);
  for (uint32_t c = 0; c < n; ++c) {
    if (clock.online(c, 0.0)) {
      pool_add(c);
      if (const double until = clock.online_until(c, 0.0); until != DeviceClock::kNever) push(until, c, EventKind::kOffline);
    } else if (const double on = clock.next_online(c, 0.0); on != DeviceClock::kNever) {
      push(on, c, EventKind::kOnline);
    }
  }
}

void AsyncSchedule::push(double t, uint32_t agent, EventKind kind, uint32_t job) {
  heap_.push(Event{t, seq_++, agent, job, kind});
}

void AsyncSchedule::pool_add(uint32_t c) {
  pos_[c] = static_cast<uint32_t>(pool_.size());
  pool_.push_back(c);
}

void AsyncSchedule::pool_remove(uint32_t c) {
  const uint32_t i = pos_[c], last = pool_.back();
  pool_[i] = last;
  pos_[last] = i;
  pool_.pop_back();
  pos_[c] = kNone;
}

AsyncSchedule::Decision AsyncSchedule::next() {
  Decision d;
  if (awaiting_cost_) return d;  // a driver error: cost() first (kEnd stops it)
  if (out_ < concurrency_ && !pool_.empty()) {
    CounterRng rng(seed_, run_, dispatches_, 0, RngStream::kDispatch);
    const uint32_t c = pool_[rng.below(static_cast<uint32_t>(pool_.size()))];
    pool_remove(c);
    job_[c] = static_cast<uint32_t>(dispatches_++);
    ++out_;
    awaiting_cost_ = true;
    return Decision{Decision::Kind::kDispatch, c, now_};
  }
  while (!heap_.empty()) {
    const Event e = heap_.top();
    heap_.pop();
    ++events_;
    now_ = e.t;
    const uint32_t c = e.agent;
    switch (e.kind) {
      case EventKind::kOnline:
        pool_add(c);
        if (const double until = clock_->online_until(c, now_); until != DeviceClock::kNever)
          push(until, c, EventKind::kOffline);
        if (out_ < concurrency_) return next();
        break;
      case EventKind::kOffline: {
        const bool lost = job_[c] != kNone || held_[c];
        held_[c] = 0;
        if (pos_[c] != kNone) pool_remove(c);
        if (const double on = clock_->next_online(c, now_); on != DeviceClock::kNever) push(on, c, EventKind::kOnline);
        if (lost) {
          if (job_[c] != kNone) --out_;
          job_[c] = kNone;
          return Decision{Decision::Kind::kAbandon, c, now_};
        }
        break;
      }
      case EventKind::kArrive:
        if (job_[c] != e.job) break;  // a job lost since
        job_[c] = kNone;
        --out_;
        pool_add(c);  // online: it arrived before leaving
        return Decision{Decision::Kind::kArrive, c, now_};
    }
  }
  return d;
}

void AsyncSchedule::cost(uint32_t agent, double seconds) {
  awaiting_cost_ = false;
  const double done = now_ + seconds;
  if (done < clock_->online_until(agent, now_)) push(done, agent, EventKind::kArrive, job_[agent]);
}

void AsyncSchedule::hold(uint32_t agent) {
  if (pos_[agent] != kNone) pool_remove(agent);
  held_[agent] = 1;
}

void AsyncSchedule::release(uint32_t agent) {
  if (!held_[agent]) return;
  held_[agent] = 0;
  if (pos_[agent] == kNone && job_[agent] == kNone && clock_->online(agent, now_)) pool_add(agent);
}

size_t AsyncSchedule::bytes() const {
  return sizeof(uint32_t) * (pool_.capacity() + pos_.capacity() + job_.capacity()) + sizeof(Event) * heap_.size();
}

}  // namespace fedrt::sim
