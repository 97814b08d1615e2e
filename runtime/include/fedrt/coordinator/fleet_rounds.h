#pragma once
// FleetRounds: the coordinator's driver of the server sessions
// (protocol/server_session.h; docs/architecture.md, "Layers"). It walks the
// task's schedule (every algorithm, every run, FedEM's initial exchange and
// then rounds 0..T-1) with one ServerSession per (algorithm, run), turns the
// session's messages into wire envelopes and the devices' envelopes into
// session calls, gives the session the clock, and keeps the round log in
// SQLite: a closed round is durable before any device learns its result, and
// a restart resumes after the last committed round. It holds no round logic
// of its own. Host code.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fedrt.pb.h"
#include "fedrt/task/task.h"
#include "fedrt/config/devices.h"
#include "fedrt/core/status.h"
#include "fedrt/ops/fleet_events.h"
#include "fedrt/coordinator/privacy_rounds.h"
#include "fedrt/coordinator/state_store.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/wire/protobuf_codec.h"

namespace fedrt::net {

// Fault injection: a seam for tests (tests/support/fault_hooks.h crashes the
// coordinator in or after a commit, stops it between rounds, dumps the
// SecAgg+ messages it receives, makes it lie); the product sets none. Every
// call comes from the event loop; each default does nothing.
class RoundFaults {
 public:
  virtual ~RoundFaults() = default;
  // The n-th round commit of this process (1, 2, ...) is about to be saved in `store` ...
  virtual void before_save(long n, StateStore& store) {}
  // ... and was saved, before any device learns of it.
  virtual void after_save(long n) {}
  // True: stop the coordinator now that n rounds closed in this process.
  virtual bool stop_after(long n) { return false; }
  // A SecAgg+ message of `agent`, as received.
  virtual void received(const protocol::ServerSession& session, uint32_t agent, const wire::Envelope& env) {}
  // A message about to be encoded for `agent`; it may be rewritten (views
  // into the hook's storage stay valid until its next call).
  virtual void sending(const protocol::ServerSession& session, uint32_t agent, protocol::ServerMessage& m) {}
};

// Agents behind gateways (docs/gateways.md): their announcements and round
// results go as one message per gateway (a round's basis, its verdict), not
// one per agent; their other messages go through Send, which relays them.
class GatewayRoute {
 public:
  virtual ~GatewayRoute() = default;
  virtual bool routed(uint32_t agent) const = 0;
  virtual void round_opened(const protocol::ServerSession& session) = 0;
  virtual void masked_wanted(const protocol::ServerSession& session) = 0;  // a secure round's phase 3 began
  virtual void round_published(const protocol::ServerSession& session) = 0;
};

// Socket bytes of every connection of the coordinator (TLS records, handshakes included).
struct Traffic {
  uint64_t in = 0;
  uint64_t out = 0;
};

struct FleetRoundsOptions {
  task::Task task;
  protocol::View<double> initial;  // the family's initial iterate (the instance's, alive throughout)
  std::vector<std::string> names;  // algorithm names, for the log
  uint32_t deadline_ms = 30000;    // per round (per SecAgg+ phase)
  double quorum = 0.5;
  RoundFaults* faults = nullptr;   // tests only (not owned)
  FleetEvents* events = nullptr;   // the operator's view (ops/fleet_monitor.h); may be null
  // Central DP-FedAvg (not owned; null without [privacy]): each session's
  // noise, epsilon after each round, and the rounds the budget allows.
  PrivacyRounds* privacy = nullptr;
  double max_update_norm = 0;  // [robustness] (protocol::ServerOptions; 0: the task's default)
  // Called after a secure round closed, for each agent convicted of wrong SecAgg+
  // shares (protocol::Commit::cheaters), with the reason; the coordinator revokes it.
  std::function<void(uint32_t agent, const std::string& why)> on_cheater;
  GatewayRoute* gateways = nullptr;  // null: every agent connects here
  // The coordinator's socket bytes (not owned; may be null): each round line
  // says how many came in (rx_bytes) and went out (tx_bytes) while it was open.
  const Traffic* traffic = nullptr;
  // Buffered asynchronous rounds (docs/async.md; null or mode "sync": rounds):
  // each (algorithm, run) is task.rounds server steps of an AsyncServer, a
  // job for every connected device while a slot is free.
  const config::AsyncSettings* async = nullptr;
  // With async: jobs and arrivals in the order of the simulator's virtual
  // clock of `devices` (the fleet then equals fedrt-sim bit for bit), one job
  // out at a time in real time: a test mode.
  bool virtual_clock = false;
  const config::DevicesSettings* devices = nullptr;
};

class FleetRounds {
 public:
  // Sends one envelope to an agent's connection (dropped when it has none).
  using Send = std::function<void(uint32_t agent, const wire::Envelope& env)>;
  // Attaches a stream of envelopes to an agent's connection, pulled one at a
  // time as the connection drains (coordinator/connection.h).
  using Source = std::function<bool(wire::Envelope& next)>;
  using Stream = std::function<void(uint32_t agent, Source source)>;
  // The family's error metric of the server state after a round (report/evaluation.h).
  using Measure = std::function<double(const protocol::ServerCore& core)>;

  FleetRounds();
  ~FleetRounds();
  // Loads the round log: rounds already committed are not run again.
  Status init(const FleetRoundsOptions& options, StateStore* store, Send send, Stream stream, Measure measure);
  // The largest chunk an agent takes (its Hello's max_chunk_bytes; 0: kChunkBytes).
  void set_chunk_limit(uint32_t agent, uint32_t bytes);

  size_t rounds_done() const { return done_count_; }
  // A device's pending update for round t proves that the coordinator which
  // opened t had committed round t - 1 (docs/security.md, "State that never
  // goes back"): "" when this state holds it, else what the state lacks.
  std::string behind(const protocol::RoundId& pending) const;
  bool finished() const { return finished_; }  // every round of the schedule is durable
  bool complete() const { return !next_slot().valid; }  // nothing left to run (also before start)
  bool stopped() const { return stopped_; }    // a fault hook stopped the rounds
  const Status& fatal() const { return fatal_; }
  // Once finished: frees the last run's server session (its exact sums cost
  // hundreds of bytes per coordinate) before the outputs rebuild every run's.
  void release_session() {
    if (finished_) session_.reset();
  }

  // Opens the first round not yet committed.
  void start(uint64_t now_ms);
  bool started() const { return started_; }
  // Presence: an agent that accepted the task is connected until its connection closes.
  void set_connected(uint32_t agent, bool connected, uint64_t now_ms);
  void set_refused(uint32_t agent, uint64_t now_ms);
  // The agent is sampled in the open round: it owes an update (or a SecAgg+
  // message) and may be busy with its local work, so its silence is not idleness.
  bool owes(uint32_t agent) const {
    if (async_ != nullptr) return async_owes(agent);
    return session_ != nullptr && session_->round_open() && session_->sampled(agent);
  }
  // A protocol message of a registered agent (the inbound's views point into
  // `env`); a refusal becomes an Error to the device.
  protocol::Verdict on_message(uint32_t agent, const wire::Envelope& env, const wire::Inbound& in, uint64_t now_ms);
  void tick(uint64_t now_ms);
  uint64_t next_deadline_ms() const;
  // A gateway's partial aggregate or masked sum for the open round
  // (ServerSession::on_partial, on_masked_sum); the caller checked that its
  // agents are that gateway's.
  protocol::Verdict on_partial(const protocol::Partial& p, uint64_t now_ms);
  protocol::Verdict on_masked_sum(const protocol::MaskedSum& m, uint64_t now_ms);
  // Frame bytes a gateway exchanged with one of its devices in the open round (devices.csv).
  void add_traffic(uint32_t agent, uint64_t bytes_down, uint64_t bytes_up);
  // The open round's basis, for a gateway that connects during it (false: none open).
  bool basis(protocol::RoundBasis& out) const;

  // The result of a closed round for a device that restarted with its update
  // pending: false when the round is not closed (the device resubmits).
  Result<bool> replay(uint32_t agent, const protocol::RoundId& id, wire::Envelope& out);

 private:
  struct Slot {
    uint32_t algorithm = 0, run = 0, round = 0;
    bool valid = false;
  };
  Slot next_slot() const;
  uint32_t rounds_per_run(uint32_t run) const {
    return opt_.privacy != nullptr ? opt_.privacy->rounds_allowed(run) : opt_.task.rounds;
  }
  bool done(uint32_t a, uint32_t r, uint32_t t) const;
  Status ensure_session(uint32_t a, uint32_t r);
  void pump(uint64_t now_ms);
  Status open(uint64_t now_ms);
  Status persist();
  RoundRecord record_of(const protocol::Commit& c, const protocol::ServerCore& core);
  std::vector<uint64_t> bytes_down_, bytes_up_;  // frame bytes per agent in the open round
  void deliver(uint64_t now_ms);
  void announce(uint32_t agent, uint64_t now_ms);
  void log_phases(uint64_t now_ms);
  std::string round_name(uint32_t t) const;

  FleetRoundsOptions opt_;
  StateStore* store_ = nullptr;
  Send send_;
  Stream stream_;
  Measure measure_;
  std::vector<uint32_t> chunk_limit_;
  uint32_t agents_ = 0;
  std::vector<std::vector<char>> done_;  // [algorithm * runs + run][round + 1] (slot 0: initial exchange)
  size_t done_count_ = 0;
  std::vector<char> connected_, refused_;
  std::unique_ptr<protocol::ServerSession> session_;
  uint32_t session_alg_ = ~0u, session_run_ = ~0u;
  bool started_ = false, finished_ = false, stopped_ = false;
  Status fatal_ = Status::Ok();
  long closed_here_ = 0;
  bool pumping_ = false, repump_ = false;
  double last_error_ = 0.0;
  // Timing of the open round, for the log (latency per phase).
  std::chrono::steady_clock::time_point t_open_, t_phase_;
  Traffic traffic_at_open_;  // opt_.traffic when the open round opened
  std::vector<double> state_scratch_;
  protocol::RoundId masked_wanted_{0, 0, protocol::kInitRound};  // the secure round whose phase 3 gateways were told of
  bool masked_told_ = false;
  FleetEvents no_events_;
  FleetEvents* events_ = &no_events_;

  // Buffered asynchronous rounds (async_rounds.cc).
  struct AsyncRun;
  std::unique_ptr<AsyncRun> async_;
  bool async_mode() const { return opt_.async != nullptr && opt_.async->async(); }
  bool async_owes(uint32_t agent) const;
  Status async_open();  // the next (algorithm, run) of the schedule
  void async_pump(uint64_t now_ms);
  void async_connected(uint32_t agent, bool connected, uint64_t now_ms);
  protocol::Verdict async_message(uint32_t agent, const wire::Envelope& env, const wire::Inbound& in, uint64_t now_ms);
  Status async_dispatch(uint32_t agent, uint64_t now_ms);
  uint64_t async_next_deadline_ms() const;  // pops the entries of settled jobs
  void async_tick(uint64_t now_ms);
  Status async_arrive(uint32_t agent, const protocol::Update& update, uint64_t now_ms);
  void async_result(uint32_t agent);
  Status async_persist();
  Status async_settle(uint64_t now_ms);  // commits a step the server took, then sends what it queued
};

}  // namespace fedrt::net
