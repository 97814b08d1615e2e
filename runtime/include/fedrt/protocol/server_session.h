#pragma once
// ServerSession: the coordinator side of the round protocol, sans I/O
// (docs/architecture.md, "Round protocol"). For one algorithm and run of a
// task, told which agents are connected and what time it is, it samples each
// round, queues the broadcast, takes updates as they arrive (validated, then
// streamed into the server core's exact sums), runs the SecAgg+ phases,
// applies deadline and quorum, closes the round and, once the driver has
// persisted the commit, queues the round results. The simulator drives it
// with messages in memory and no clock; the coordinator with TLS sessions, a
// timer and SQLite. Host code: memory is sized at init.
//
//   open_round(t) -> next_outgoing()* -> on_update / on_secagg_*  (tick(now))
//     -> round_closed(): persist commit() and export_state() -> publish()

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fedrt/algorithms/adaptive_clip.h"
#include "fedrt/compression/diana.h"
#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/protocol/partial.h"
#include "fedrt/protocol/server_core.h"
#include "fedrt/protocol/server_secagg.h"
#include "fedrt/protocol/server_uplink.h"
#include "fedrt/protocol/upload_journal.h"
#include "fedrt/privacy/ddg_params.h"

namespace fedrt::protocol {

struct ServerOptions {
  task::Task task;
  uint32_t algorithm = 0;
  uint32_t run = 0;
  View<double> initial;         // the family's initial iterate (read by init only)
  uint32_t deadline_ms = 0;     // per round (per SecAgg+ phase); 0 = none (the simulator)
  double quorum = 1.0;          // fraction of the sampled agents needed at the deadline
  // Central DP-FedAvg (task.privacy): fills n standard normal draws, the
  // noise added to each round's sum (privacy/gaussian_noise.h). Required
  // then: without it init refuses the task.
  std::function<Status(double* out, size_t n)> standard_normal;
  // Adaptive clipping (docs/privacy.md, "Adaptive clipping"): the clip
  // starts at task.privacy.clip and follows adaptive.quantile; each round
  // then draws d + 1 normals, the sum's d first, the count's last.
  algorithms::AdaptiveClip adaptive;
  // [robustness] max_update_norm (docs/security.md): the largest L2 norm of
  // an update the server takes (ServerUplink::set_max_norm); 0: the task's
  // default, DefaultMaxUpdateNorm(task).
  double max_update_norm = 0;
  // A gateway's session (docs/gateways.md): it serves some of the agents,
  // takes their messages as the coordinator would, and instead of closing a
  // round hands up a Partial (export_partial); the coordinator's verdict
  // comes back through settle().
  bool partial = false;
  // The simulator's virtual clock (docs/async.md): a round samples only
  // among the agents connected (online) when it opens.
  bool sample_connected = false;
};

// The default bound on an update's L2 norm: sqrt(DBL_MAX) / (N + 1) for N
// agents, so that the squares of a norm and the sum of N updates stay finite
// (an update of 1e308 values is refused; every finite honest update of the
// tests passes). It stops overflow, not a large finite shift: a task sets
// max_update_norm to what its honest updates can reach.
double DefaultMaxUpdateNorm(const task::Task& task);

// DP-FedAvg's check of a plain update (server_clip.cc, docs/privacy.md):
// ||dx|| = sqrt(sum_i dx_i^2) in index order of a raw float64 update of d
// values (-1 when it is not one: the uplink refuses it), and whether a norm
// is over `clip` beyond a float32 device's rounding, tol = min(1e-4, (d + 8) 2^-24).
double RawUpdateNorm(const Update& u, int d);
bool OverClip(double norm, double clip, int d);

// Why a device's message was refused (the driver sends it back).
enum class Refusal : uint8_t {
  kNone = 0,
  kStaleRound,   // for a round that is closed
  kFutureRound,  // for a round that is not open yet
  kDuplicate,
  kNotSampled,
  kMalformed,   // undecodable payload, wrong encoding, wrong phase
  kDimension,
  kNonFinite,
  kChunk,  // a chunk out of order, duplicated, past the announced size or with another total
  kUnclipped,  // central DP-FedAvg: an update longer than privacy.clip (dropped from the round)
  kOverNorm,   // an update longer than robustness.max_update_norm (dropped from the round)
};
struct Verdict {
  Refusal refusal = Refusal::kNone;
  std::string why;
  bool whole = false;  // the message completed the device's update (inline, or its last chunk)
  bool ok() const { return refusal == Refusal::kNone; }
};

struct Outgoing {
  uint32_t agent = 0;
  MessageKind kind = MessageKind::kNone;
};

// A closed round: what the driver persists before anyone learns the result.
struct Commit {
  RoundId id;
  std::vector<uint32_t> members;  // agents whose updates were aggregated
  uint32_t sampled = 0;
  uint32_t local_steps = 0;
  uint64_t bits_up = 0;    // payload bits received (all SecAgg+ traffic in a secure round)
  uint64_t bits_down = 0;  // broadcast bits sent (and SecAgg+ traffic)
  uint64_t samples = 0;    // sum of the updates' sample counts
  std::vector<WorkReport> reports;  // the members' reports, aligned with members
  std::vector<uint64_t> member_samples;  // the members' sample counts (0 in a secure round)
  // Means over the members' reports of f_c at the broadcast model (the
  // round's train loss) and at their local models; NaN without reports.
  double train_loss = std::nan("");
  double local_loss = std::nan("");
  const char* closed_by = "";  // all | deadline | empty | secagg | failed
  std::string failure;         // why a round aggregated nothing (a secure round that could not be unmasked)
  // A secure round: agents convicted of wrong SecAgg+ shares (dropped from the
  // unmasking; the driver shuts them out) and the number of shares dropped.
  std::vector<uint32_t> cheaters;
  size_t off_shares = 0;
  // Central DP-FedAvg: agents whose update exceeded privacy.clip, dropped
  // from the round as if they had not reported (docs/privacy.md).
  std::vector<uint32_t> unclipped;
  // Agents whose update exceeded robustness.max_update_norm, dropped the same way.
  std::vector<uint32_t> over_norm;
  // Adaptive clipping: the clip C_t this round used (0: off), and the
  // members whose update was within it (sum of b_i).
  double clip = 0;
  uint32_t within_clip = 0;
};

// A SecAgg+ phase that closed (for the driver's log).
struct PhaseClosed {
  int phase = 0;  // 1 advertise, 2 shares, 3 masked, 4 check, 5 unmask
  uint32_t answered = 0, n = 0;
  const char* by = "";  // all | deadline
};

class ServerSession {
 public:
  Status init(const ServerOptions& options);
  const ServerCore& core() const { return core_; }
  const ServerUplink& uplink() const { return uplink_; }
  const task::Task& task() const { return task_; }
  // The clip updates are held to now: C_t (adaptive clipping) or task.privacy.clip.
  double clip() const { return adaptive_.on() ? clip_[0] : task_.privacy.clip; }

  // Presence: connected (and registered) devices; refused ones never take
  // part, and one refused during the open round (revoked) leaves it: the
  // round closes as soon as the others answered.
  void set_connected(uint32_t agent, bool connected, uint64_t now_ms);
  void set_refused(uint32_t agent, bool refused);
  // A partial session waits only for the sampled agents it serves (all by default).
  void set_served(uint32_t agent, bool served);

  // Partial aggregation (server_partial.cc, docs/gateways.md).
  // Gateway: once round_closed(), the round's sums and its members' records
  // (the sums are moved out: a second call finds them zero).
  Status export_partial(Partial& out);
  // Coordinator: what the open round's gateways start from.
  void basis(RoundBasis& out) const;
  // Gateway: takes the coordinator's state and opens the same round; a
  // secure round only records its id (the gateway relays it).
  Status open_from(const RoundBasis& b, uint64_t now_ms);
  // Gateway: the compressed downlink's version and last delta per chain,
  // as the coordinator's session holds them (with its state, imported
  // before open_round).
  void set_downlink_basis(uint32_t version, const std::vector<uint8_t>* deltas);
  uint32_t downlink_version() const { return down_version_; }
  const std::vector<uint8_t>& downlink_delta(uint32_t k) const { return down_delta_[k]; }
  // Gateway: the coordinator closed the round with `included` (those of
  // this gateway's agents it aggregated) and, for LSA, the result's model;
  // an open round closes first (what it held is dropped). publish() then
  // queues the round results.
  void settle(const std::vector<uint32_t>& included, View<double> model);
  // Coordinator: a gateway's partial aggregate for the open round, validated
  // (members sampled and not yet answered, sizes, finite pieces, integer
  // sums within what the members can add) before anything moves, then added
  // to the sums as if each member's update had come here.
  Verdict on_partial(const Partial& p, uint64_t now_ms);
  // Coordinator: a gateway's sum of masked inputs in a secure round's phase
  // 3, checked like its members' own inputs before anything moves.
  Verdict on_masked_sum(const MaskedSum& m, uint64_t now_ms);

  // FedEM and VR-FedEM start each run with the exchange of V_{0,c} (round kInitRound).
  bool needs_initial_exchange() const { return core_.has_initial_exchange() && !init_done_; }
  void mark_initial_exchange_done() { init_done_ = true; }
  Status open_round(uint32_t round, uint64_t now_ms);
  bool round_open() const { return state_ == State::kOpen; }
  bool round_closed() const { return state_ == State::kClosed; }
  const RoundId& current() const { return id_; }
  bool sampled(uint32_t agent) const { return sampled_[agent] != 0; }

  // The next message to send; its contents come from the accessors below.
  bool next_outgoing(Outgoing& out);
  Announcement announcement(uint32_t agent, uint64_t now_ms) const;
  // The broadcast the open round's announcements carry whole (chunked ones
  // cut it): the core's broadcast, or xhat with the compressed downlink. Both
  // stay as they are until the round closes.
  View<double> announced_model() const {
    return View<double>{downlink_ ? xhat_.data() : core_.broadcast(), static_cast<uint32_t>(core_.broadcast_dim())};
  }
  SecAggKeysMsg secagg_keys(uint32_t agent) { return secagg_.keys_for(agent); }
  SecAggSharesMsg secagg_shares_in(uint32_t agent) { return secagg_.shares_for(agent); }
  SecAggUnmaskRequestMsg secagg_unmask_request(uint32_t agent) { return secagg_.survivors_for(agent); }
  SecAggCheckMsg secagg_checks(uint32_t agent) { return secagg_.checks_for(agent); }
  RoundResult result(uint32_t agent) const;
  // The message next_outgoing() named, whatever its kind (views as above).
  ServerMessage message(const Outgoing& out, uint64_t now_ms);

  // Device messages.
  // One message of agent c: the server side's dispatch, for every driver
  // (the simulator, the coordinator); it calls one of the handlers below.
  Verdict on_message(uint32_t agent, const ClientMessage& m, uint64_t now_ms);
  // An update, inline or the header of a chunked one (u.chunked): its chunks
  // then come through on_chunk. A header for the update already in flight
  // (the device reconnected) resumes it where it was cut off.
  Verdict on_update(uint32_t agent, const Update& u, uint64_t now_ms);
  Verdict on_chunk(uint32_t agent, const Chunk& c, uint64_t now_ms);
  // Bytes of agent c's chunked update taken so far (all segments).
  uint64_t upload_received(uint32_t agent) const;
  Verdict on_secagg_advertise(uint32_t agent, const SecAggAdvertiseMsg& m, uint64_t now_ms);
  Verdict on_secagg_shares(uint32_t agent, const SecAggSharesMsg& m, uint64_t now_ms);
  Verdict on_secagg_masked(uint32_t agent, const SecAggMaskedMsg& m, uint64_t now_ms);
  Verdict on_secagg_check(uint32_t agent, const SecAggCheckMsg& m, uint64_t now_ms);
  Verdict on_secagg_unmask(uint32_t agent, const SecAggUnmaskMsg& m, uint64_t now_ms);

  // Deadlines: closes the round (or the SecAgg+ phase) when one has passed.
  void tick(uint64_t now_ms);
  // The virtual clock's deadline: closes the open round with the updates it
  // has, whatever the quorum (a secure round closes its phase, as tick does).
  void expire(uint64_t now_ms);
  uint64_t next_deadline_ms() const { return state_ == State::kOpen ? deadline_ : kNoDeadline; }
  static constexpr uint64_t kNoDeadline = ~uint64_t{0};

  const Commit& commit() const { return commit_; }
  // The secure round of the open round (its parameters) and the phases that
  // closed since the driver last cleared the list.
  const ServerSecAgg& secagg() const { return secagg_; }
  const std::vector<PhaseClosed>& phases_closed() const { return phases_; }
  void clear_phases_closed() { phases_.clear(); }
  // After the commit is durable: queues the round results to its members.
  void publish();

  // What a restart needs besides the commits: the server cores' state, the
  // uplink's memory sum W and (compressed downlink) xhat, as slices of the
  // session's memory (persisted without a copy); a restore writes the same
  // layout into import_targets() and calls finish_import().
  void state_slices(std::vector<StateSlice>& out) const;
  void import_targets(std::vector<StateTarget>& out);
  Status finish_import() { return core_.finish_import(); }
  size_t state_size() const;
  // The same state as one vector (tests, tools).
  void export_state(std::vector<double>& out) const;
  Status import_state(const std::vector<double>& in);

 private:
  enum class State : uint8_t { kIdle, kOpen, kClosed };

  void queue(uint32_t agent, MessageKind kind) { outbox_.push_back(Outgoing{agent, kind}); }
  void announce(uint32_t agent);
  Verdict secagg_message(uint32_t agent, int phase, const RoundId& id, const SecAggAdvertiseMsg* ad,
                         const SecAggSharesMsg* sh, const SecAggMaskedMsg* ma, const SecAggCheckMsg* ch,
                         const SecAggUnmaskMsg* un, uint64_t now_ms);
  void advance_secagg();
  void close(const char* by);
  void close_partial(const char* by);
  Status check_partial(const Partial& p);
  void summarize_reports();
  void fail(const std::string& why);
  void compress_broadcast();
  void record(uint32_t agent, const Update& u, uint64_t bits);
  void list_report(uint32_t agent);
  Verdict begin_upload(uint32_t agent, const Update& header);
  Verdict complete_upload(uint32_t agent);
  void abort_upload(uint32_t agent);
  // Central DP-FedAvg without SecAgg+ (server_clip.cc): the L2 norm of a
  // plain update, ||dx|| = sqrt(sum_i dx_i^2) in index order, and the drop of
  // one above clip (1 + tol), tol = min(1e-4, (d + 8) 2^-24): a float32
  // device's own rounding of the clip, the norm and the scaling.
  bool checks_clip() const;
  bool over_clip(double norm) const;
  double payload_norm(const Update& u) const;  // -1 when the payload is not d raw float64 values
  double journal_norm(uint32_t agent, const Update& header) const;
  Verdict drop_unclipped(uint32_t agent, double norm);
  // Any update refused after its round checks passed (too long): the agent
  // answered, nothing of it reaches the sums, the round does not wait for it.
  Verdict drop_update(uint32_t agent, Refusal why, std::string reason);
  double journal_update_norm(uint32_t agent, const Update& header) const;  // a streamed raw update's norm
  uint32_t quorum_needed() const;

  task::Task task_{};
  std::function<Status(double*, size_t)> standard_normal_;  // DP-FedAvg's noise source
  std::vector<double> noise_;  // central: the noise; distributed: the decoded sum
  privacy::DdgRound ddg_{};      // distributed DP: this round's parameters
  std::vector<double> ddg_work_;
  algorithms::AdaptiveClip adaptive_;
  std::vector<double> clip_;          // adaptive clipping: {C_t}, a slice of the server's state
  std::vector<uint8_t> indicator_;    // per agent: this round's Update.clip_indicator
  Status init_adaptive_clip(const algorithms::AdaptiveClip& a);  // server_adaptive_clip.cc
  void adapt_clip();
  uint32_t agents_ = 0;
  ServerCore core_;
  ServerUplink uplink_;
  ServerSecAgg secagg_;
  bool secure_ = false;
  bool init_done_ = false;
  State state_ = State::kIdle;
  RoundId id_{};
  uint32_t local_steps_ = 0;
  uint32_t deadline_ms_ = 0;
  double quorum_ = 1.0;
  uint64_t deadline_ = kNoDeadline;
  uint64_t now_ = 0;
  bool partial_ = false;
  bool sample_connected_ = false;
  std::vector<char> served_;
  std::vector<char> connected_, refused_, sampled_, informed_, announced_, reported_;
  std::vector<WorkReport> reports_;  // per agent, this round's
  std::vector<uint64_t> samples_;
  std::vector<uint32_t> reported_by_;  // agents whose reports_ / samples_ this round set
  std::vector<char> report_listed_;  // per agent: in reported_by_
  static constexpr uint32_t kNoRound = 0xFFFFFFFEu;
  uint32_t prev_round_ = kNoRound;  // the round before the open one, and who reported in it
  std::vector<char> prev_reported_;
  bool had_round_ = false;
  uint32_t expected_ = 0;
  uint32_t withdrawn_ = 0;  // participants refused during the open round (revoked): not waited for
  std::vector<Outgoing> outbox_;
  size_t outbox_head_ = 0;
  std::vector<double> result_;  // what round results carry (LSA: theta_{t+1} or xhat_{t+1})
  // Compressed broadcast: the agents' model xhat per chain, its version
  // (rounds closed since the run's start), the last close's coded delta per
  // chain, and per agent the version it is known to hold (its update for a
  // round proves it received that round's announcement; -1: unknown, so it
  // gets xhat whole).
  bool downlink_ = false;
  std::vector<uint8_t> down_memory_;
  compression::CompressedDifference<double> down_[task::kMaxSegments];
  std::vector<uint8_t> down_wire_;
  std::vector<double> xhat_, down_g_;
  uint32_t down_version_ = 0;
  std::vector<uint8_t> down_delta_[task::kMaxSegments];
  std::vector<int64_t> synced_;
  bool sends_delta(uint32_t agent) const;
  // Chunked updates in flight, per agent: the header, the segment being
  // received and the bytes taken of each; the bytes themselves are in the
  // agent's journal (created on its first chunked update).
  struct Upload {
    bool active = false;
    Update header;
    uint32_t segment = 0;
    uint64_t received[task::kMaxSegments] = {};
  };
  std::vector<Upload> uploads_;
  uint32_t active_uploads_ = 0;  // uploads_ with active set (close() scans only when some are)
  std::vector<std::unique_ptr<UploadJournal>> journals_;
  std::string taint_;  // why this round's sums hold a cut-off update they could not give back
  Commit commit_;
  std::vector<uint32_t> notify_;
  std::vector<PhaseClosed> phases_;
};

}  // namespace fedrt::protocol
