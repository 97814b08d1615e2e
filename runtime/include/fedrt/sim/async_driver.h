#pragma once
// AsyncDriver: the simulator's driver of buffered asynchronous rounds
// (docs/async.md). The AsyncSchedule decides in virtual time which device
// takes a free slot and when its job arrives; the device's ClientSession
// trains at dispatch on the model version it was given (its update waits in
// its seat until it arrives); the AsyncServer weighs each arrival by its
// staleness and steps every K of them. Only devices holding a job have a
// session (at most `concurrency`); the others keep their parked bytes. Host
// code.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "fedrt/protocol/async_server.h"
#include "fedrt/protocol/client_session.h"
#include "fedrt/sim/async_schedule.h"
#include "fedrt/sim/session_driver.h"

namespace fedrt::sim {

class AsyncDriver {
 public:
  // Runs task.rounds server steps; on_step sees each (DriverRound::round =
  // the step's version, time_s its virtual time). Ends early, with
  // kCancelled, when no device will come online again.
  Status run(const DriverOptions& options, const protocol::AsyncOptions& async,
             const std::function<Status(const DriverRound&)>& on_step);
  const protocol::AsyncServer& server() const { return server_; }
  size_t seats() const { return seats_.size(); }
  size_t parked_bytes_per_agent() const { return rest_bytes_; }
  const AsyncSchedule& schedule() const { return schedule_; }
  uint64_t dispatches() const { return dispatches_; }
  uint64_t abandoned() const { return abandoned_; }
  uint64_t aggregated() const { return aggregated_; }          // updates that entered a buffer
  uint64_t staleness_sum() const { return staleness_sum_; }    // their staleness, summed

 private:
  struct Seat {
    protocol::ClientSession<double> session;
    protocol::ClientMessage output;
    std::unique_ptr<uint8_t[]> arena;
  };
  Status dispatch(uint32_t agent);
  Status arrive(uint32_t agent, const std::function<Status(const DriverRound&)>& on_step);
  void release(uint32_t agent);  // parks the agent's session and frees its seat
  Status exchange();             // SecAgg+: the server's outbox and the answers it gets
  Status stepped(const std::function<Status(const DriverRound&)>& on_step);  // the step's row
  Status new_seat(uint32_t agent);

  DriverOptions opt_;
  protocol::AsyncServer server_;
  AsyncSchedule schedule_;
  std::deque<Seat> seats_;
  std::vector<uint32_t> free_seats_;
  std::vector<uint32_t> seat_of_;  // per agent: its seat while it holds a job
  std::vector<uint8_t> parked_;    // per agent: rest_bytes_ bytes
  size_t rest_bytes_ = 0, arena_bytes_ = 0;
  uint64_t entropy_seed_ = 0;  // SecAgg+ secrets (SimulatedSecrets)
  uint64_t samples_ = 0, dispatches_ = 0, abandoned_ = 0, aggregated_ = 0, staleness_sum_ = 0;
};

}  // namespace fedrt::sim
