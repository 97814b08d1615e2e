#pragma once
// AsyncServer: buffered asynchronous aggregation (FedBuff; docs/async.md),
// the server side sans I/O, for the optimisation family. Up to `concurrency`
// devices hold a job at once, each on the model version it was given; the
// server weighs an update of staleness s = v_now - v_job by
//   w(s) = (1 + s)^-a                    (a = staleness_exponent),
// drops one with s > max_staleness, and after every K = buffer updates steps
//   x_{v+1} = x_v + eta_g (1/K) sum_i w(s_i) dx_i
// (Scaffold: c <- c + (1/N) sum_i dc_i, so mean_c c_c = c holds). Updates are
// decoded by the synchronous server's uplink and summed exactly, so a
// buffer's step does not depend on the order of its updates. Each job is a
// round of the device protocol: its id's round is the job's number (the
// device's randomness is keyed by it), its result says whether the update
// entered a step. Host code: memory is sized at init.

#include <cstdint>
#include <functional>
#include <vector>

#include "fedrt/protocol/server_core.h"
#include "fedrt/protocol/server_secagg.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/protocol/server_uplink.h"

namespace fedrt::protocol {

struct AsyncOptions {
  uint32_t buffer = 10;              // K
  uint32_t concurrency = 100;        // jobs out at once
  uint32_t max_staleness = 20;
  double staleness_exponent = 0.5;   // a
  uint32_t steps = 0;                // T: no secure group forms after the T-th step (0: no limit)
};

// w(s) = (1 + s)^-a: the weight of an update of staleness s.
double StalenessWeight(uint32_t staleness, double exponent);

// What one arriving update did.
struct Arrival {
  Verdict verdict;          // a refusal: malformed, not this device's job, ...
  bool dropped = false;     // taken but staler than max_staleness: not aggregated
  uint32_t staleness = 0;
  double weight = 0;        // w(s) when aggregated
  bool stepped = false;     // it filled the buffer: the server stepped (step())
};

class AsyncServer {
 public:
  Status init(const ServerOptions& options, const AsyncOptions& async);
  const ServerCore& core() const { return core_; }
  const AsyncOptions& options() const { return async_; }
  uint32_t version() const { return version_; }  // server steps taken
  bool done() const { return async_.steps > 0 && version_ >= async_.steps; }
  uint32_t jobs_out() const { return out_; }
  bool slot_free() const { return out_ < async_.concurrency; }
  // Holds a job, or (SecAgg+) a receipt whose secure group has not settled.
  bool busy(uint32_t agent) const { return job_[agent] != kNoJob || held_[agent] != 0; }
  bool has_job(uint32_t agent) const { return job_[agent] != kNoJob; }
  uint32_t job_version(uint32_t agent) const { return base_[agent]; }

  // A free slot for agent c (slot_free(), !busy(c)): its job, announced on
  // the current model x_v. Jobs are numbered 0, 1, ... in dispatch order.
  Status dispatch(uint32_t agent, Announcement& out);
  // Agent c's update for its job.
  Arrival on_update(uint32_t agent, const Update& u);
  // Agent c gave up its job (went offline): the slot frees, nothing aggregated
  // (SecAgg+: a held receipt leaves its buffer, a group member drops out).
  void abandon(uint32_t agent);

  // SecAgg+ (task.secagg.enabled; async_secure.cc): each buffer is one
  // secure group, so the server learns only the buffer's sum. A device's
  // update arrives as a receipt (one empty segment) and its device is held;
  // the K-th receipt forms the group (the first K held, ascending agents):
  // each member is re-announced its job with the group's SecAgg+ parameters
  // and its weight w(s), scales its integers by it and masks them; the
  // unmasked sum, less K times the zero point, is sum_i w(s_i) dx_i. The
  // step then settles the members (results queued; next_outgoing).
  bool secure() const { return secure_; }
  // Central DP-FedAvg (task.privacy): every update must be within the clip
  // (else refused, kUnclipped), its device is held until its buffer's step
  // so that it adds at most one update to a step, and each step adds
  // N(0, sigma^2 C^2) noise to the sum before dividing by K. The accountant
  // composes the steps without subsampling (docs/async.md).
  bool private_steps() const { return task_.privacy.enabled; }
  // The drivers hold a device after its arrival (no new job) until the
  // server queues its result: under SecAgg+ or DP.
  bool holds() const { return secure_ || task_.privacy.enabled; }
  bool group_open() const { return !group_.empty(); }
  bool next_outgoing(Outgoing& out);
  ServerMessage message(const Outgoing& out);
  Verdict on_secagg(uint32_t agent, const ClientMessage& m);
  // The open SecAgg+ phase closes with the members that answered (a deadline).
  void expire_phase();
  // The result of agent c's last job (included: it entered a step).
  RoundResult result(uint32_t agent) const;

  // The last step: its version's commit (members in arrival order, bits,
  // samples, reports), and the staleness of each member.
  const Commit& step() const { return commit_; }
  const std::vector<uint32_t>& step_staleness() const { return staleness_; }
  uint64_t dropped_stale() const { return dropped_; }  // over the run

 private:
  static constexpr uint32_t kNoJob = ~0u;
  void begin_step();
  void finish_step(const char* closed_by);  // the buffer's sums are in the core: step, commit
  struct Held {  // a receipt of the secure path
    uint32_t agent, job, staleness;
    double weight;
    WorkReport report;
    uint64_t samples;
  };
  Arrival on_receipt(uint32_t agent, const Update& u, uint32_t staleness);
  void form_group();
  void advance_group();
  void settle_group(const std::vector<uint32_t>& contributors);
  bool secure_ = false;
  std::function<Status(double*, size_t)> standard_normal_;  // DP-FedAvg's noise
  std::vector<double> noise_;
  std::vector<char> held_;
  std::vector<Held> waiting_, group_;
  ServerSecAgg secagg_;
  uint32_t groups_ = 0;
  std::vector<Outgoing> outbox_;
  size_t outbox_head_ = 0;
  std::vector<uint32_t> notify_;

  task::Task task_{};
  AsyncOptions async_{};
  uint32_t agents_ = 0;
  uint32_t algorithm_ = 0, run_ = 0;
  ServerCore core_;
  ServerUplink uplink_;
  uint32_t version_ = 0, next_job_ = 0, out_ = 0, local_steps_ = 0;
  std::vector<uint32_t> job_, base_, last_job_;
  std::vector<char> included_;
  Commit pending_, commit_;  // the buffer being filled, the last step
  std::vector<uint32_t> pending_staleness_, staleness_;
  uint64_t dropped_ = 0;
};

}  // namespace fedrt::protocol
