#pragma once
// AsyncSchedule: the virtual clock of buffered asynchronous rounds
// (docs/async.md): which online device takes a free slot and when each job
// arrives, as a sequence of decisions in virtual time, sans I/O. Events are
// devices coming online, going offline (a job still out is lost) and jobs
// arriving; a free slot goes to an online idle device drawn uniformly (keyed
// by (seed, run, dispatch number)), so the same experiment gives the same
// sequence in every driver. Ties in time go in the order the events were
// scheduled. Host code: O(N) memory, O(log N) per event.

#include <cstdint>
#include <queue>
#include <vector>

#include "fedrt/sim/device_clock.h"

namespace fedrt::sim {

class AsyncSchedule {
 public:
  struct Decision {
    enum class Kind : uint8_t { kDispatch, kArrive, kAbandon, kEnd } kind = Kind::kEnd;
    uint32_t agent = 0;
    double t = 0;  // virtual seconds
  };

  void init(const DeviceClock& clock, uint32_t concurrency, uint64_t seed, uint32_t run);
  // The next decision. After a kDispatch the driver must give the job's
  // duration with cost() before asking again.
  Decision next();
  // The dispatched job of `agent` takes `seconds` (download, work, upload):
  // it arrives then, unless the device goes offline first (kAbandon then).
  void cost(uint32_t agent, double seconds);
  // SecAgg+ (docs/async.md): a device whose update arrived as a receipt is
  // held (no new job) until its buffer's secure round settles; going offline
  // before then it leaves the buffer (kAbandon).
  void hold(uint32_t agent);
  void release(uint32_t agent);
  double now() const { return now_; }
  uint64_t events() const { return events_; }
  uint32_t jobs_out() const { return out_; }
  size_t bytes() const;  // memory the schedule holds (the benchmark's table)

 private:
  enum class EventKind : uint8_t { kOnline, kOffline, kArrive };
  struct Event {
    double t;
    uint64_t seq;
    uint32_t agent;
    uint32_t job;
    EventKind kind;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  static constexpr uint32_t kNone = ~0u;
  void push(double t, uint32_t agent, EventKind kind, uint32_t job = 0);
  void pool_add(uint32_t agent);
  void pool_remove(uint32_t agent);

  const DeviceClock* clock_ = nullptr;
  uint32_t concurrency_ = 0, out_ = 0;
  uint64_t seed_ = 0;
  uint32_t run_ = 0;
  double now_ = 0;
  uint64_t seq_ = 0, events_ = 0, dispatches_ = 0;
  bool awaiting_cost_ = false;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap_;
  std::vector<uint32_t> pool_;  // online devices without a job
  std::vector<uint32_t> pos_;   // per agent: its index in pool_, or kNone
  std::vector<uint32_t> job_;   // per agent: the job it holds (dispatch number), or kNone
  std::vector<char> held_;      // per agent: held (SecAgg+ receipt in a buffer)
};

}  // namespace fedrt::sim
