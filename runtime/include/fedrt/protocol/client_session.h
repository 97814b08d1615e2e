#pragma once
// ClientSession: the device side of the round protocol, sans I/O
// (docs/architecture.md, "Round protocol"). For one algorithm and run of a
// task it takes the server's messages and returns the device's: an
// announcement runs the local work, codes the update (raw, or compressed with
// its memory) and answers with an Update or, in a secure round, with the
// SecAgg+ phases; a round result commits the round (control variates,
// compression memory). Every driver runs it: the simulator per agent, the
// POSIX device, the firmware. It never blocks, reads a clock or allocates:
// all memory comes from the caller's Arena at init. Device code.
//
// Persistence: everything that must survive a restart (control variates,
// compression memory, FedEM statistics, the pending update) lies in one
// region at the start of the arena; state() / restore() copy it.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "fedrt/task/fingerprint.h"
#include "fedrt/task/task.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/problems/local_problem.h"
#include "fedrt/protocol/announcement_check.h"
#include "fedrt/protocol/client_secagg.h"
#include "fedrt/protocol/client_work.h"
#include "fedrt/protocol/families.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/protocol/client_ddg.h"
#include "fedrt/protocol/noise_bits.h"
#include "fedrt/protocol/uplink.h"
#include "fedrt/privacy/ddg_codec.h"

namespace fedrt::protocol {

template <class S, uint32_t kFamilies = kAllFamilies>
class ClientSession {
 public:
  using Work = ClientWork<S, kFamilies>;

  struct Options {
    const task::Task* task = nullptr;  // copied
    uint32_t algorithm = 0;              // index in task->algorithms
    uint32_t run = 0;
    uint32_t agent = 0;  // c: the device's index, keys its random streams
    problems::LocalProblem<S> problem;
    EntropyFn entropy = nullptr;  // fresh SecAgg+ secrets (secure tasks)
    void* entropy_ctx = nullptr;
    // Distributed DP's rounding and noise (null: `entropy`, the device's one
    // source); a simulator whose SecAgg+ secrets come from its seed passes
    // the operating system's source here.
    EntropyFn noise_entropy = nullptr;
    void* noise_entropy_ctx = nullptr;
  };

  // Distributed DP (docs/privacy.md): only builds with the optimisation family run it.
  static constexpr bool kDdg = Has(kFamilies, task::Family::kOpt);

  ClientSession() = default;
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Arena bytes for algorithm `a` of `task`.
  static size_t WorkspaceBytes(const task::Task& task, uint32_t a) {
    const task::AlgorithmChoice alg = task.algorithms[a];
    const typename Work::Shape s = Work::ShapeOf(task, alg);
    size_t n = sizeof(State) + Arena::kAlignment + Work::ArenaBytes(task, alg) +
               s.chains * SegmentCoder<S>::ArenaBytes(s.segment_dim, task.compression.quantizer) +
               sizeof(S) * static_cast<size_t>(s.broadcast_dim) + Arena::kAlignment;
    if (Downlink(task)) n += sizeof(S) * static_cast<size_t>(s.broadcast_dim) + Arena::kAlignment;
    if constexpr (kDdg) {
      if (task.privacy.distributed) {  // the noised integers (persistent) and the rotation's doubles, d_pad each
        const uint32_t inputs = privacy::PaddedDim(s.chains * static_cast<uint32_t>(s.segment_dim));
        return n + (sizeof(uint32_t) + sizeof(double)) * static_cast<size_t>(inputs) + 2 * Arena::kAlignment +
               (task.secagg.enabled ? ClientSecAgg::ArenaBytes(inputs) : 0);
      }
    }
    if (task.secagg.enabled) n += ClientSecAgg::ArenaBytes(s.chains * static_cast<uint32_t>(s.segment_dim));
    return n;
  }

  // Whether the task compresses the broadcast (every family; EM compresses
  // its statistic; docs/architecture.md, "Downlink").
  static bool Downlink(const task::Task& task) {
    return task.compression.downlink && task.compression.enabled();
  }

  // Why this device cannot take `task` (nullptr: it can), given its local
  // problem and `capacity` bytes of arena: a family not in this build, no
  // data for the problem, a dimension or workspace above its limits.
  static const char* Refusal(const task::Task& task, const problems::LocalProblem<S>& problem, size_t capacity) {
    if (task.num_algorithms == 0 || task.num_algorithms > task::kMaxAlgorithms) return "the task names no algorithm";
    for (uint32_t a = 0; a < task.num_algorithms; ++a)
      if (const char* why = RefusalFor(task, a, problem, capacity)) return why;
    return nullptr;
  }
  // The same for algorithm `a` alone.
  static const char* RefusalFor(const task::Task& task, uint32_t a, const problems::LocalProblem<S>& problem, size_t capacity) {
    // The wire's bounds are the drivers' (a Linux device refuses d above
    // kMaxLinuxDim, a firmware image tasks beyond its frames, fw/client.cc);
    // the simulator has no wire.
    if (task.problem.dim == 0) return "the task's model has no parameters";
    if (!Has(kFamilies, task::FamilyOf(task.algorithms[a].kind)))
      return "this device build does not include the task's algorithm family";
    if (task::FamilyOf(task.algorithms[a].kind) != task::FamilyOf(task.problem.kind))
      return "the task's algorithm does not match its problem";
    if (const char* why = problems::MissingOracle(task.problem, problem)) return why;
    if (WorkspaceBytes(task, a) > capacity) return "the task's vectors do not fit this device's memory";
    return nullptr;
  }

  Status init(Arena& arena, const Options& o) {
    if (o.task == nullptr || o.algorithm >= o.task->num_algorithms)
      return Status::InvalidArgument("client session: no such algorithm in the task");
    if (const char* why = RefusalFor(*o.task, o.algorithm, o.problem, arena.capacity() - arena.used()))
      return Status::FailedPrecondition(why);
    task_ = *o.task;
    problem_ = o.problem;
    entropy_ = o.entropy;
    entropy_ctx_ = o.entropy_ctx;
    if constexpr (kDdg) {
      noise_entropy_ = o.noise_entropy != nullptr ? o.noise_entropy : o.entropy;
      noise_entropy_ctx_ = o.noise_entropy != nullptr ? o.noise_entropy_ctx : o.entropy_ctx;
    }
    const task::AlgorithmChoice alg = task_.algorithms[o.algorithm];
    auto st = arena.allocate<State>(1);
    if (!st.ok()) return st.status();
    state_ = st->data;
    state_->magic = kStateMagic;
    state_->scalar_bytes = sizeof(S);
    state_->fingerprint = task::SessionFingerprint(task_, o.algorithm, o.run);
    state_->algorithm = o.algorithm;
    state_->run = o.run;
    state_->agent = o.agent;
    state_->loss_before = state_->loss_after = __builtin_nan("");
    state_->examples = 0;
    state_begin_ = reinterpret_cast<uint8_t*>(state_);
    FEDRT_TRY(work_.create(arena, task_, alg, o.run));
    const typename Work::Shape& s = work_.shape();
    const bool em = s.family == task::Family::kEm;
    const bool memory = em ? alg.kind != task::AlgorithmKind::kFedEmNaive : task_.compression.control_variates;
    for (uint32_t k = 0; k < s.chains; ++k) {
      auto c = SegmentCoder<S>::create(arena, s.segment_dim, task_.compression.quantizer, memory);
      if (!c.ok()) return c.status();
      coder_[k] = *c;
    }
    auto b = arena.allocate<S>(static_cast<size_t>(s.broadcast_dim));
    if (!b.ok()) return b.status();
    broadcast_ = b->data;
    uint32_t inputs = s.chains * static_cast<uint32_t>(s.segment_dim);
    if constexpr (kDdg) {
      if (task_.privacy.distributed) {  // the pending round's noised integers persist with it
        inputs = privacy::PaddedDim(inputs);
        auto q = arena.allocate<uint32_t>(inputs);
        if (!q.ok()) return q.status();
        ddg_ints_ = q->data;
      }
    }
    state_size_ = static_cast<size_t>(arena.base() + arena.used() - state_begin_);
    if constexpr (kDdg) {
      if (task_.privacy.distributed) {
        auto w = arena.allocate<double>(inputs);
        if (!w.ok()) return w.status();
        ddg_work_ = w->data;
      }
    }
    downlink_ = Downlink(task_);
    if (downlink_) {  // decoded deltas, before they move xhat (not persistent)
      auto m = arena.allocate<S>(static_cast<size_t>(s.broadcast_dim));
      if (!m.ok()) return m.status();
      delta_ = m->data;
    }
    if (task_.secagg.enabled) FEDRT_TRY(secagg_.create(arena, inputs));
    coded_ = em || task_.compression.enabled();
    return Status::Ok();
  }

  // An announcement: runs the local work (once per round: a repeated
  // announcement of the pending round sends the same update again, with fresh
  // SecAgg+ keys in a secure round).
  Status on_announce(const Announcement& a, ClientMessage& out) {
    out.kind = MessageKind::kNone;
    FEDRT_TRY(check_announcement(a));
    if (state_->pending && state_->pending_id == a.id) return send_pending(a, out);
    if (state_->pending) discard();  // a new round began without our update: it was not aggregated
    FEDRT_TRY(receive_model(a));
    if (a.kind == WorkKind::kInitialStatistic) {
      S* v0 = const_cast<S*>(coder_[0].sent());  // V_{0,c} is what the server adds
      last_samples_ = work_.run_initial(broadcast_, problem_, v0);
      FEDRT_TRY(coder_[0].encode_float32(v0));
      state_->encoding = static_cast<uint8_t>(Encoding::kRawFloat32);
      return hold_pending(a, out);
    }
    const S* value[task::kMaxSegments] = {};
    const S* start[task::kMaxSegments] = {};
    if constexpr (Work::kOpt) {  // adaptive clipping: this round's clip C_t (docs/privacy.md)
      if (a.clip > 0 && !task_.privacy.enabled) return Status::InvalidArgument("announcement: a clip in a task without privacy");
      if (a.clip > 0) work_.set_clip(a.clip);
    }
    last_samples_ = work_.run(broadcast_, a.id.round, a.local_steps, state_->agent, problem_, value, start);
    if constexpr (Work::kOpt) state_->clip_indicator = a.clip > 0 ? work_.clip_indicator() : 0;
    return send_update(a, value, start, out);
  }

  // on_announce in two parts around a host lane kernel (sim/td_lanes.h). When
  // the announced work is a plain TD(0) block, begin_announce takes the
  // broadcast, describes the block in `block` and sets `deferred`; the driver
  // runs the block, then finish_announce codes and sends the update.
  // Otherwise it does nothing and the driver calls on_announce.
  Status begin_announce(const Announcement& a, problems::TdBlock<S>& block, bool& deferred) {
    deferred = false;
    if (a.kind != WorkKind::kLocalWork || !a.report || (state_->pending && state_->pending_id == a.id) ||
        !work_.td_block_possible(problem_))
      return Status::Ok();
    FEDRT_TRY(check_announcement(a));
    if (state_->pending) discard();
    FEDRT_TRY(receive_model(a));
    work_.begin_td_block(broadcast_, a.id.round, a.local_steps, state_->agent, problem_, block);
    deferred = true;
    return Status::Ok();
  }
  Status finish_announce(const Announcement& a, ClientMessage& out) {
    out.kind = MessageKind::kNone;
    const S* value[task::kMaxSegments] = {};
    const S* start[task::kMaxSegments] = {};
    last_samples_ = work_.finish_td_block(broadcast_, a.local_steps, value, start);
    return send_update(a, value, start, out);
  }

  // A chunked broadcast (docs/architecture.md, "Chunked transfer"): bytes
  // [offset, offset + n) of the broadcast (little-endian float64, cut at whole
  // values) written in place as they arrive; the announcement follows with
  // model_in_place. A device never holds more of it than one chunk besides.
  uint64_t broadcast_bytes() const { return 8ull * static_cast<uint64_t>(work_.shape().broadcast_dim); }
  Status receive_broadcast(uint64_t offset, const uint8_t* data, uint32_t n) {
    const uint64_t total = 8ull * static_cast<uint64_t>(work_.shape().broadcast_dim);
    if (offset % 8 != 0 || n % 8 != 0 || offset > total || n > total - offset)
      return Status::OutOfRange("broadcast chunk: not whole values within the broadcast");
    if (n == 0) return Status::Ok();
    const compression::QuantizerSpec raw{};  // kNone: little-endian float64, every value finite
    Status st = compression::Decode<S>(raw, data, n, static_cast<int>(n / 8), broadcast_ + offset / 8);
    if (!st.ok()) return Status(st.code(), "broadcast chunk: a NaN or Inf entry, or a value out of the scalar's range");
    return Status::Ok();
  }

  // The round closed: commit the pending update if the server aggregated it.
  Status on_result(const RoundResult& r) {
    if (!state_->pending || r.id != state_->pending_id) return Status::Ok();  // not ours, or already settled
    secagg_.close();
    if (!r.included) {
      discard();
      return Status::Ok();
    }
    const typename Work::Shape& s = work_.shape();
    const S* sent[task::kMaxSegments] = {};
    for (uint32_t k = 0; k < s.chains; ++k) sent[k] = coder_[k].sent();
    if (work_.result_needs_model() && state_->pending_id.round != kInitRound) {
      if (r.model.size != static_cast<uint32_t>(s.dim)) return Status::InvalidArgument("round result: model of the wrong dimension");
      for (int i = 0; i < s.dim; ++i) {
        const double v = r.model[static_cast<uint32_t>(i)];
        if (!(v - v == 0.0)) return Status::InvalidArgument("round result: model has a NaN or Inf entry");
        broadcast_[i] = static_cast<S>(v);
      }
      work_.commit(sent, broadcast_);
    } else if (state_->pending_id.round != kInitRound) {
      work_.commit(sent, nullptr);
    }
    for (uint32_t k = 0; k < s.chains; ++k) coder_[k].commit();
    state_->pending = 0;
    return Status::Ok();
  }

  Status on_secagg_keys(const SecAggKeysMsg& m, ClientMessage& out) {
    out.kind = MessageKind::kNone;
    if (!secagg_.open_for(m.id)) return Status::Ok();  // another round's message
    FEDRT_TRY(secagg_.on_keys(m, out.shares));
    out.kind = MessageKind::kSecAggShares;
    return Status::Ok();
  }
  Status on_secagg_shares_in(const SecAggSharesMsg& m, ClientMessage& out) {
    out.kind = MessageKind::kNone;
    if (!secagg_.open_for(m.id)) return Status::Ok();
    FEDRT_TRY(secagg_.on_shares_in(m, out.masked));
    out.masked.report = report();
    out.kind = MessageKind::kSecAggMasked;
    return Status::Ok();
  }
  Status on_secagg_unmask_request(const SecAggUnmaskRequestMsg& m, ClientMessage& out) {
    out.kind = MessageKind::kNone;
    if (!secagg_.open_for(m.id)) return Status::Ok();
    FEDRT_TRY(secagg_.on_unmask_request(m, out.check));
    out.kind = MessageKind::kSecAggCheck;
    return Status::Ok();
  }
  Status on_secagg_checks(const SecAggCheckMsg& m, ClientMessage& out) {
    out.kind = MessageKind::kNone;
    if (!secagg_.open_for(m.id)) return Status::Ok();
    FEDRT_TRY(secagg_.on_checks(m, out.unmask));
    out.kind = MessageKind::kSecAggUnmask;
    return Status::Ok();
  }

  // One server message: the device side's dispatch, for every driver. An
  // announcement (its broadcast whole, or written in place from chunks), a
  // round result, or a SecAgg+ phase; a broadcast's chunks are the device
  // agent's to assemble (protocol/device_agent.h).
  Status on_message(const ServerMessage& m, ClientMessage& out) {
    out.kind = MessageKind::kNone;
    switch (m.kind) {
      case MessageKind::kAnnouncement: return on_announce(m.announcement, out);
      case MessageKind::kRoundResult: return on_result(m.result);
      case MessageKind::kSecAggKeys: return on_secagg_keys(m.keys, out);
      case MessageKind::kSecAggSharesIn: return on_secagg_shares_in(m.shares, out);
      case MessageKind::kSecAggUnmaskRequest: return on_secagg_unmask_request(m.unmask_request, out);
      case MessageKind::kSecAggChecks: return on_secagg_checks(m.checks, out);
      default: return Status::InvalidArgument("a message a device does not take");
    }
  }

  // The update not yet settled by a round result (for Hello after a restart).
  bool pending(RoundId* id) const {
    if (state_ == nullptr || !state_->pending) return false;
    if (id != nullptr) *id = state_->pending_id;
    return true;
  }
  uint32_t algorithm() const { return state_->algorithm; }
  uint32_t run() const { return state_->run; }
  uint64_t last_samples() const { return last_samples_; }
  // The pending (or last) update's report: the local objective before and
  // after the local work (own-data optimisation tasks, else NaN).
  WorkReport report() const {
    WorkReport r;
    r.loss_before = state_->loss_before;
    r.loss_after = state_->loss_after;
    r.examples = state_->examples;
    return r;
  }
  const typename Work::Shape& shape() const { return work_.shape(); }
  const SegmentCoder<S>& coder(uint32_t k) const { return coder_[k]; }
  const Work& work() const { return work_; }

  // The persistent region (see the header comment), to store as it is.
  const uint8_t* state() const { return state_begin_; }
  size_t state_size() const { return state_size_; }
  // Restores a region saved by state() of a session of the same task,
  // algorithm, run and build; refuses anything else.
  Status restore(const uint8_t* bytes, size_t n) {
    if (n != state_size_) return Status::DataLoss("client state: size differs from this session's");
    State h;
    std::memcpy(&h, bytes, sizeof h);
    if (h.magic != kStateMagic || h.scalar_bytes != sizeof(S)) return Status::DataLoss("client state: not a state of this build");
    if (h.fingerprint != state_->fingerprint || h.agent != state_->agent)
      return Status::FailedPrecondition("client state: saved for another task, run or agent");
    std::memcpy(state_begin_, bytes, n);
    for (uint32_t k = 0; k < work_.shape().chains; ++k) coder_[k].restore_length(state_->payload_len[k]);
    if (state_->pending && state_->encoding == static_cast<uint8_t>(Encoding::kRawFloat32)) coder_[0].restore_float32_pending();
    return Status::Ok();
  }

  // Parking (a host driver of many agents, sim/session_driver.h): between
  // rounds a session with no update pending keeps only a few spans of its
  // arena: its header, the work's (ClientWork::rest_spans), each chain's
  // compression memory V and, with a compressed downlink, xhat. park() writes
  // them to rest_bytes() bytes, dropping an update no round will take now;
  // unpark() loads bytes parked by a session of the same task, algorithm and
  // run, and this session then acts as `agent` with `problem`.
  size_t rest_bytes() {
    Span<uint8_t> spans[kMaxRestSpans];
    size_t n = 0;
    for (uint32_t i = 0, k = rest_spans(spans); i < k; ++i) n += spans[i].size;
    return n;
  }
  void park(uint8_t* out) {
    if (state_->pending) discard();
    Span<uint8_t> spans[kMaxRestSpans];
    for (uint32_t i = 0, k = rest_spans(spans); i < k; out += spans[i++].size) std::memcpy(out, spans[i].data, spans[i].size);
  }
  void unpark(uint32_t agent, const problems::LocalProblem<S>& problem, const uint8_t* in) {
    Span<uint8_t> spans[kMaxRestSpans];
    for (uint32_t i = 0, k = rest_spans(spans); i < k; in += spans[i++].size) std::memcpy(spans[i].data, in, spans[i].size);
    state_->agent = agent;
    problem_ = problem;
  }

 private:
  // The announcement's broadcast into broadcast_ (in full, as a downlink
  // delta, or already written in chunks).
  Status receive_model(const Announcement& a) {
    if (a.has_delta) {
      FEDRT_TRY(apply_delta(a));
    } else if (!a.model_in_place) {
      for (int i = 0; i < work_.shape().broadcast_dim; ++i) broadcast_[i] = static_cast<S>(a.model[static_cast<uint32_t>(i)]);
    }
    if (downlink_) {
      state_->has_xhat = 1;
      state_->xhat_version = a.model_version;
    }
    return Status::Ok();
  }

  // Codes the local work's result (per chain: `value`, relative to `start`) and sends it.
  // Inlined: a firmware image calls it from on_announce only, and a call of
  // its own would cost the image bytes it does not have (fedrt-fw-lsa's budget).
  [[gnu::always_inline]] Status send_update(const Announcement& a, const S* const value[], const S* const start[], ClientMessage& out) {
    if (!a.report) return Status::Ok();  // VR-FedEM: the estimate moved, nothing to send
    if constexpr (kDdg) {
      if (task_.privacy.distributed) {
        FEDRT_TRY(encode_distributed(a, value[0]));
        state_->encoding = static_cast<uint8_t>(Encoding::kCodec);
        return hold_pending(a, out);
      }
    }
    for (uint32_t k = 0; k < work_.shape().chains; ++k) {
      if (coded_) {
        CounterRng rng(task_.seed, state_->run, state_->agent, a.id.round, RngStream::kCompression);
        FEDRT_TRY(coder_[k].encode(value[k], start[k], rng));
      } else {
        FEDRT_TRY(coder_[k].encode_raw(value[k]));
      }
    }
    state_->encoding = static_cast<uint8_t>(coded_ ? Encoding::kCodec : Encoding::kRawFloat64);
    return hold_pending(a, out);
  }

  // Distributed DP (protocol/client_ddg.h), once per round: a repeated
  // announcement sends the same integers (fresh noise would average out).
  Status encode_distributed(const Announcement& a, const S* dx) {
    return EncodeDistributed(task_, state_->algorithm, state_->run, state_->agent, a,
                             static_cast<uint32_t>(work_.shape().segment_dim), dx, noise_entropy_,
                             noise_entropy_ctx_, ddg_work_, ddg_ints_);
  }

  // The coded update is this round's pending one until the server has it.
  Status hold_pending(const Announcement& a, ClientMessage& out) {
    state_->pending = 1;
    state_->pending_id = a.id;
    state_->samples = last_samples_;
    state_->loss_before = work_.loss_before();
    state_->loss_after = work_.loss_after();
    state_->examples = work_.examples();
    for (uint32_t k = 0; k < work_.shape().chains; ++k)
      state_->payload_len[k] = static_cast<uint32_t>(coder_[k].payload_size());
    return send_pending(a, out);
  }

  static constexpr uint32_t kMaxRestSpans = 2 + Work::kMaxRestSpans + task::kMaxSegments;
  uint32_t rest_spans(Span<uint8_t>* out) {
    uint32_t n = 0;
    out[n++] = Span<uint8_t>{reinterpret_cast<uint8_t*>(state_), sizeof(State)};
    n += work_.rest_spans(out + n);
    for (uint32_t k = 0; k < work_.shape().chains; ++k)
      if (Span<uint8_t> v = coder_[k].rest(); v.size > 0) out[n++] = v;
    if (downlink_) out[n++] = Span<uint8_t>{reinterpret_cast<uint8_t*>(broadcast_), sizeof(S) * static_cast<size_t>(work_.shape().broadcast_dim)};
    return n;
  }

  static constexpr uint32_t kStateMagic = 0x53435246u;  // "FRCS"

  struct State {
    uint32_t magic;
    uint32_t scalar_bytes;
    uint64_t fingerprint;
    uint32_t algorithm, run, agent;
    uint8_t pending;
    uint8_t encoding;
    RoundId pending_id;
    uint32_t payload_len[task::kMaxSegments];
    uint64_t samples;
    double loss_before, loss_after;  // the pending update's report
    uint64_t examples;
    uint32_t xhat_version;  // compressed downlink: the version of xhat in broadcast_
    uint8_t has_xhat;
    uint8_t clip_indicator;  // adaptive clipping: the pending update's Update.clip_indicator
  };

  // xhat += alpha Q(x - xhat) decoded (alpha = 1 / (1 + omega), as the
  // server's), chain by chain, for a device holding version
  // a.delta_base (a repeat of the announcement it already applied is a no-op);
  // every chain is decoded and checked before xhat moves.
  Status apply_delta(const Announcement& a) {
    if (state_->has_xhat && state_->xhat_version == a.model_version) return Status::Ok();
    if (!state_->has_xhat || state_->xhat_version != a.delta_base)
      return Status::FailedPrecondition("announcement: a model delta for a version of xhat this device does not hold "
                                        "(it takes the next broadcast whole)");
    const typename Work::Shape& s = work_.shape();
    for (uint32_t k = 0; k < s.chains; ++k) {
      S* m = delta_ + static_cast<size_t>(k) * s.segment_dim;
      FEDRT_TRY(compression::Decode<S>(task_.compression.quantizer, a.delta[k].data, a.delta[k].size, s.segment_dim, m));
      for (int i = 0; i < s.segment_dim; ++i)
        if (!(m[i] - m[i] == S(0))) return Status::InvalidArgument("announcement: model delta has a NaN or Inf entry");
    }
    const S alpha = static_cast<S>(compression::ControlVariateStep(task_.compression.quantizer, s.segment_dim));
    const int moved = static_cast<int>(s.chains) * s.segment_dim;
    for (int i = 0; i < moved; ++i) broadcast_[i] += alpha * delta_[i];
    // EM: the delta moves xhat's statistic; its parameters are T(xhat), as the server computes them.
    if constexpr (Work::kEm) {  // an image without EM carries no M-step
      if (s.family == task::Family::kEm)
        problems::GmmMStep(broadcast_, static_cast<int>(task_.problem.gmm.components),
                           static_cast<int>(task_.problem.gmm.data_dim), broadcast_ + s.dim);
    }
    return Status::Ok();
  }

  Status check_announcement(const Announcement& a) const {
    return CheckAnnouncement(a, task_, state_->algorithm, state_->run, work_.shape(), downlink_);
  }

  Status send_pending(const Announcement& a, ClientMessage& out) {
    const typename Work::Shape& s = work_.shape();
    if (a.secagg.enabled && state_->encoding != static_cast<uint8_t>(Encoding::kRawFloat32)) {
      uint32_t* x = secagg_.input();
      if constexpr (kDdg) {
        if (task_.privacy.distributed) {  // the round's noised integers, d_pad of them
          const uint32_t count = privacy::PaddedDim(s.chains * static_cast<uint32_t>(s.segment_dim));
          std::memcpy(x, ddg_ints_, sizeof(uint32_t) * count);
          FEDRT_TRY(secagg_.start(a.id, a.secagg, count, task_.compression.quantizer.bits, entropy_, entropy_ctx_,
                                  out.advertise));
          out.kind = MessageKind::kSecAggAdvertise;
          return Status::Ok();
        }
      }
      for (uint32_t k = 0; k < s.chains; ++k) FEDRT_TRY(coder_[k].integers(x + k * static_cast<uint32_t>(s.segment_dim)));
      if (a.weight > 0 && a.weight < 1) {  // asynchronous rounds: w (x - z) + z, rounded (docs/async.md)
        const double z = static_cast<double>((uint64_t{1} << task_.compression.quantizer.bits) - 1) / 2.0;
        for (uint32_t i = 0, n = s.chains * static_cast<uint32_t>(s.segment_dim); i < n; ++i)
          x[i] = static_cast<uint32_t>(std::floor(a.weight * (static_cast<double>(x[i]) - z) + z + 0.5));
      }
      FEDRT_TRY(secagg_.start(a.id, a.secagg, s.chains * static_cast<uint32_t>(s.segment_dim),
                              task_.compression.quantizer.bits, entropy_, entropy_ctx_, out.advertise));
      out.kind = MessageKind::kSecAggAdvertise;
      return Status::Ok();
    }
    Update& u = out.update;
    u.id = state_->pending_id;
    u.encoding = static_cast<Encoding>(state_->encoding);
    u.segments = s.chains;
    if (task_.secagg.enabled && state_->encoding != static_cast<uint8_t>(Encoding::kRawFloat32)) {
      // A secure task's update never leaves in the clear: an announcement
      // without a secure round gets a receipt (one empty segment), which an
      // asynchronous server turns into a secure group (docs/async.md).
      u.segments = 1;
      u.payload[0] = View<uint8_t>{nullptr, 0};
      u.sample_count = state_->samples;
      u.report = report();
      out.kind = MessageKind::kUpdate;
      return Status::Ok();
    }
    for (uint32_t k = 0; k < s.chains; ++k)
      u.payload[k] = View<uint8_t>{coder_[k].payload(), static_cast<uint32_t>(coder_[k].payload_size())};
    u.sample_count = state_->samples;
    if constexpr (Work::kOpt) u.clip_indicator = state_->clip_indicator;
    u.report = report();
    out.kind = MessageKind::kUpdate;
    return Status::Ok();
  }

  void discard() {
    state_->pending = 0;
    for (uint32_t k = 0; k < work_.shape().chains; ++k) coder_[k].discard();
    secagg_.close();
  }

  task::Task task_{};
  problems::LocalProblem<S> problem_{};
  EntropyFn entropy_ = nullptr;
  void* entropy_ctx_ = nullptr;
  State* state_ = nullptr;
  uint8_t* state_begin_ = nullptr;
  size_t state_size_ = 0;
  Work work_;
  SegmentCoder<S> coder_[task::kMaxSegments];
  S* broadcast_ = nullptr;
  S* delta_ = nullptr;     // compressed downlink: decoded deltas
  bool downlink_ = false;
  ClientSecAgg secagg_;
  bool coded_ = false;
  uint64_t last_samples_ = 0;
  // Distributed DP, last: the members before keep their offsets (and the
  // Cortex-M3 image its bytes).
  EntropyFn noise_entropy_ = nullptr;
  void* noise_entropy_ctx_ = nullptr;
  uint32_t* ddg_ints_ = nullptr;  // the pending round's noised integers (d_pad)
  double* ddg_work_ = nullptr;    // and the rotation's workspace
};

}  // namespace fedrt::protocol
