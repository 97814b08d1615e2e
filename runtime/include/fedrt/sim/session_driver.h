#pragma once
// SessionDriver: the simulator's driver of the round protocol. One server
// session and a client session for every agent a round calls on (idle agents
// are parked: only their state between rounds), messages passed in memory, no
// clock; the agents' local work runs on the worker pool (every agent's
// randomness is keyed by (seed, run, agent, round), so the thread count never
// changes a result). Simulated SecAgg+ dropouts (secagg_dropout) vanish
// before sending their masked input. Host code.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "fedrt/task/task.h"
#include "fedrt/core/worker_pool.h"
#include "fedrt/protocol/client_session.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/sim/device_clock.h"
#include "fedrt/sim/gateway_hub.h"
#include "fedrt/sim/rank_messages.h"
#include "fedrt/sim/td_lanes.h"

namespace fedrt::sim {

// Simulated devices' SecAgg+ secrets (protocol::EntropyFn): HKDF of the
// seed at `ctx` (a uint64_t), the round and the device's id.
int SimulatedSecrets(void* ctx, uint64_t round_id, uint32_t u, uint8_t* out, size_t n);

struct DriverOptions {
  const task::Task* task = nullptr;
  uint32_t algorithm = 0;
  uint32_t run = 0;
  const std::vector<problems::LocalProblem<double>>* agents = nullptr;
  protocol::View<double> initial;  // the family's initial iterate (alive while the driver runs)
  WorkerPool* pool = nullptr;
  // Local work below this many samples per round runs inline (waking the
  // workers costs tens of microseconds).
  double min_parallel_work = 0;
  double work_per_sample = 1;
  config::TdKernel kernel = config::TdKernel::kAuto;  // TD(0) local steps: lanes of agents or one by one (same results)
  // A distributed run (docs/architecture.md, "MPI"): this rank's server replica
  // sees every agent, its client sessions are those of RangeOf(agents,
  // ranks->size(), ranks->rank()), and the agents' messages cross here.
  RankChannel* ranks = nullptr;
  // Agents a round does not call on keep only their state between rounds
  // (ClientSession::park: control variates, compression memory, xhat), and the
  // agents it calls run on a pool of sessions as large as the largest round;
  // false keeps one session per agent for the whole run (the same results,
  // more memory: the reference in tests).
  bool park_idle_agents = true;
  // Agents behind this many gateways (sim/gateway_hub.h); 0: all at the coordinator.
  uint32_t gateways = 0;
  // Central DP-FedAvg's standard normal draws (protocol::ServerOptions).
  std::function<Status(double* out, size_t n)> standard_normal;
  algorithms::AdaptiveClip adaptive;  // adaptive clipping (protocol::ServerOptions)
  double max_update_norm = 0;         // [robustness] (protocol::ServerOptions)
  // The virtual clock (docs/async.md): rounds sample only online agents and
  // last until their slowest member has downloaded, trained and uploaded;
  // a member late for the deadline (0: none) or offline before it is done
  // is dropped. Null: no clock, every agent answers at once.
  const DeviceClock* clock = nullptr;
  double deadline_s = 0;
};

// A simulated agent's client session options: the task, algorithm and run
// of `o`, the agent's local problem, SecAgg+ secrets from SimulatedSecrets
// keyed by *entropy_seed, distributed DP's noise from the operating system.
protocol::ClientSession<double>::Options AgentOptions(const DriverOptions& o, uint32_t agent, uint64_t* entropy_seed);

// One closed round (round = protocol::kInitRound for FedEM's initial exchange).
struct DriverRound {
  uint32_t round = 0;
  const protocol::ServerSession* server = nullptr;  // null under asynchronous rounds
  const protocol::ServerCore* core = nullptr;       // the server's core after the round (or step)
  const protocol::Commit* commit = nullptr;
  uint64_t samples = 0;  // drawn by every agent that worked this round
  double time_s = 0;     // the virtual clock when the round closed (0 without one)
};

class SessionDriver {
 public:
  // Runs the task's rounds; on_round sees each closed round before its
  // results reach the agents. Stops at the first error.
  Status run(const DriverOptions& options, const std::function<Status(const DriverRound&)>& on_round);
  const protocol::ServerSession& server() const { return server_; }
  // Memory of the agents: sessions in the pool (the most agents one round
  // called on, or every agent when they are not parked) and the bytes an
  // idle agent keeps.
  size_t seats() const { return seats_.size(); }
  size_t parked_bytes_per_agent() const { return rest_bytes_; }

 private:
  Status play_round(uint32_t round);
  Status deliver_announcements(uint32_t round);
  void announce_range(size_t begin, size_t end);
  Status feed(uint32_t agent, const protocol::ClientMessage& out);
  Status send(uint32_t agent, const protocol::ClientMessage& out);  // to the server (or the agent's gateway)
  // What agent c is sent: the coordinator's message, or its gateway's with gateways.
  protocol::Announcement announcement(uint32_t agent) {
    return hub_.partial_round() ? hub_.gateway_of(agent).announcement(agent, 0) : server_.announcement(agent, 0);
  }
  Status run_rounds(const std::function<Status(const DriverRound&)>& on_round);
  Status exchange();  // distributed: the messages of this step, to every replica
  // The virtual clock: whether agent c's answer makes the round in time
  // (false: it is dropped); moves round_end_ to its arrival or drop.
  bool in_time(uint32_t agent, const protocol::ClientMessage& answer, uint64_t samples);

  // A session of the pool with what it answers. An agent keeps its seat
  // until a later round needs the seat for another agent (then it is parked),
  // so the agents of consecutive rounds, or of every round under full
  // participation, are not parked and unparked each time.
  static constexpr uint32_t kUnseated = ~0u;
  struct Seat {
    protocol::ClientSession<double> session;
    protocol::ClientMessage output;
    Status error;
    std::unique_ptr<uint8_t[]> arena;
    uint32_t agent = kUnseated;
    uint64_t round = 0;  // serial_ of the last round it served
  };
  Status seat(uint32_t agent);  // gives `agent` a seat for this round (unparking it) if it has none
  Seat& seat_of(uint32_t agent) { return seats_[seat_of_[agent - own_.lo]]; }
  bool seated(uint32_t agent) const { return seat_of_[agent - own_.lo] != kUnseated; }

  DriverOptions opt_;
  protocol::ServerSession server_;
  GatewayHub hub_;
  std::deque<Seat> seats_;
  std::vector<uint32_t> idle_seats_;  // seats this round has not used yet (parked agents, their seats taken)
  std::vector<uint32_t> seat_of_;     // per agent of own_: its seat or kUnseated
  uint64_t serial_ = 0;               // rounds played, the init round included
  std::vector<uint8_t> parked_;       // per agent of own_: rest_bytes_ bytes (park_idle_agents)
  size_t rest_bytes_ = 0;
  size_t arena_bytes_ = 0;            // per seat
  AgentRange own_;
  RankMessages messages_;
  std::vector<uint32_t> announced_;  // this step's announcements (all agents)
  uint64_t samples_shared_ = 0;      // samples_ as of the last exchange
  std::vector<uint32_t> batch_;
  std::vector<char> dropped_;
  uint64_t entropy_seed_ = 0;
  uint64_t samples_ = 0;
  double now_s_ = 0, round_end_ = 0;  // the virtual clock: the open round's start, and its end so far
};

}  // namespace fedrt::sim
