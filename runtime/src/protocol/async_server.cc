#include "fedrt/protocol/async_server.h"

#include <cmath>

#include <fmt/format.h>

namespace fedrt::protocol {

double StalenessWeight(uint32_t staleness, double exponent) {
  return std::pow(1.0 + static_cast<double>(staleness), -exponent);
}

Status AsyncServer::init(const ServerOptions& o, const AsyncOptions& a) {
  task_ = o.task;
  async_ = a;
  agents_ = task_.problem.agents;
  algorithm_ = o.algorithm;
  run_ = o.run;
  if (agents_ == 0) return Status::InvalidArgument("async server: the task has no agents");
  if (a.buffer < 1) return Status::InvalidArgument("async server: buffer must be >= 1");
  if (a.concurrency < a.buffer) return Status::InvalidArgument("async server: concurrency must be >= buffer");
  FEDRT_TRY(core_.init(task_, o.algorithm, o.run, o.initial));
  if (core_.family() != task::Family::kOpt || core_.chains() != 1)
    return Status::InvalidArgument("async server: buffered aggregation runs FedAvg, FedProx and Scaffold only");
  if (task_.compression.downlink)
    return Status::InvalidArgument("async server: the compressed downlink is not supported");
  if (task_.privacy.enabled) {  // central DP-FedAvg only (docs/async.md)
    if (task_.privacy.distributed || task_.secagg.enabled || !o.standard_normal || o.adaptive.on())
      return Status::InvalidArgument("async server: DP-FedAvg runs central, without SecAgg+ or adaptive clipping, "
                                     "with a noise source");
    standard_normal_ = o.standard_normal;
  }
  secure_ = task_.secagg.enabled;
  FEDRT_TRY(uplink_.init(task_, core_, agents_));
  if (uplink_.keeps_sum() || (uplink_.closes_round() && !secure_))
    return Status::InvalidArgument("async server: an uplink that aggregates at the round's close (rounding without "
                                   "SecAgg+, compression memories) cannot weigh updates by staleness");
  if (secure_ && task_.algorithms[o.algorithm].kind == task::AlgorithmKind::kScaffold)
    return Status::InvalidArgument("async server: Scaffold under SecAgg+: its dc would be weighted with dx, which "
                                   "breaks mean_c c_c = c");
  uplink_.set_max_norm(o.max_update_norm > 0 ? o.max_update_norm : DefaultMaxUpdateNorm(task_));
  if (task_.privacy.enabled) {
    core_.set_fixed_denominator(static_cast<double>(a.buffer));
    noise_.assign(static_cast<size_t>(core_.dim()), 0.0);
  }
  job_.assign(agents_, kNoJob);
  base_.assign(agents_, 0);
  last_job_.assign(agents_, kNoJob);
  included_.assign(agents_, 0);
  held_.assign(agents_, 0);
  waiting_.clear();
  group_.clear();
  outbox_.clear();
  outbox_head_ = 0;
  groups_ = 0;
  version_ = next_job_ = out_ = 0;
  dropped_ = 0;
  begin_step();
  return Status::Ok();
}

void AsyncServer::begin_step() {
  local_steps_ = core_.start_round(version_);
  uplink_.start_round();
  pending_ = Commit{};
  pending_.id = RoundId{algorithm_, run_, version_};
  pending_staleness_.clear();
}

Status AsyncServer::dispatch(uint32_t agent, Announcement& a) {
  if (agent >= agents_) return Status::InvalidArgument("async server: unknown agent");
  if (busy(agent)) return Status::FailedPrecondition("async server: the agent already holds a job");
  if (!slot_free()) return Status::FailedPrecondition("async server: every slot is taken");
  if (next_job_ == kInitRound || next_job_ == kNoJob) return Status::OutOfRange("async server: job numbers exhausted");
  const uint32_t job = next_job_++;
  job_[agent] = last_job_[agent] = job;
  base_[agent] = version_;
  included_[agent] = 0;
  ++out_;
  a = Announcement{};
  a.id = RoundId{algorithm_, run_, job};
  a.kind = WorkKind::kLocalWork;
  a.local_steps = local_steps_;
  a.report = true;
  a.model = View<double>{core_.broadcast(), static_cast<uint32_t>(core_.broadcast_dim())};
  pending_.bits_down += static_cast<uint64_t>(core_.broadcast_dim()) * 64;
  return Status::Ok();
}

void AsyncServer::abandon(uint32_t agent) {
  if (agent >= agents_) return;
  if (has_job(agent)) {
    job_[agent] = kNoJob;
    --out_;
    return;
  }
  if (!held_[agent] || !secure_) return;  // DP: its update is in the buffer's sums already; its result waits
  for (size_t i = 0; i < waiting_.size(); ++i)
    if (waiting_[i].agent == agent) {  // not in a group yet: it leaves its buffer
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
      held_[agent] = 0;
      return;
    }
  secagg_.on_disconnect(agent);  // a member of the open group: a dropout
  if (secagg_.phase_complete()) advance_group();
}

Arrival AsyncServer::on_update(uint32_t agent, const Update& u) {
  Arrival r;
  auto refuse = [&](Refusal why, std::string text) {
    r.verdict = Verdict{why, std::move(text)};
    return r;
  };
  if (agent >= agents_) return refuse(Refusal::kMalformed, "unknown agent");
  if (u.id.algorithm != algorithm_ || u.id.run != run_ || !has_job(agent) || u.id.round != job_[agent])
    return refuse(Refusal::kStaleRound, has_job(agent) ? fmt::format("job {} is not this device's; its job is {}", u.id.round,
                                                                  job_[agent])
                                                    : fmt::format("job {}: this device holds no job", u.id.round));
  if (u.chunked) return refuse(Refusal::kMalformed, "chunked updates are not supported in asynchronous mode yet");
  r.staleness = version_ - base_[agent];
  if (secure_) return on_receipt(agent, u, r.staleness);
  if (r.staleness > async_.max_staleness) {  // taken, not aggregated: the slot frees, the result says so
    job_[agent] = kNoJob;
    --out_;
    r.dropped = true;
    ++dropped_;
    return r;
  }
  if (task_.privacy.enabled) {  // DP-FedAvg: an update longer than the clip is refused (docs/privacy.md)
    const double norm = RawUpdateNorm(u, core_.dim());  // -1: not raw dx, the uplink refuses it
    if (norm != -1 && OverClip(norm, task_.privacy.clip, core_.dim()))
      return refuse(Refusal::kUnclipped, fmt::format("update of L2 norm {} (privacy.clip = {}): dropped, its job ends",
                                                     norm, task_.privacy.clip));
  }
  r.weight = StalenessWeight(r.staleness, async_.staleness_exponent);
  core_.set_staleness_weight(r.weight);
  auto bits = uplink_.accept(agent, u, core_.broadcast(), core_);
  if (!bits.ok()) {
    const StatusCode c = bits.status().code();
    return refuse(c == StatusCode::kResourceExhausted ? Refusal::kOverNorm
                  : c == StatusCode::kOutOfRange      ? Refusal::kDimension
                                                      : Refusal::kMalformed,
                  bits.status().message());
  }
  job_[agent] = kNoJob;
  --out_;
  included_[agent] = 1;
  if (task_.privacy.enabled) held_[agent] = 1;  // one update per step: held until this buffer's step
  pending_.members.push_back(agent);
  pending_staleness_.push_back(r.staleness);
  pending_.bits_up += *bits;
  pending_.samples += u.sample_count;
  pending_.reports.push_back(u.report);
  pending_.member_samples.push_back(u.sample_count);
  if (pending_.members.size() < async_.buffer) return r;
  finish_step("buffer");
  r.stepped = true;
  return r;
}

// The buffer's sums are in the core: x_{v+1} from them, the step's commit,
// and the next buffer.
void AsyncServer::finish_step(const char* closed_by) {
  if (task_.privacy.enabled && standard_normal_) {  // DP-FedAvg: N(0, sigma^2 C^2) on the buffer's sum
    const Status st = standard_normal_(noise_.data(), noise_.size());
    const double scale = task_.privacy.noise_multiplier * task_.privacy.clip;
    for (double& v : noise_) v = st.ok() ? v * scale : std::nan("");  // a failed source poisons the step, never skips it
    core_.add_noise(0, noise_.data());
    for (uint32_t c : pending_.members) {
      held_[c] = 0;
      outbox_.push_back(Outgoing{c, MessageKind::kRoundResult});
    }
  }
  core_.finish_round(version_);
  double before = 0, after = 0;
  uint32_t nb = 0, na = 0;
  for (const WorkReport& w : pending_.reports) {
    if (w.loss_before == w.loss_before) before += w.loss_before, ++nb;
    if (w.loss_after == w.loss_after) after += w.loss_after, ++na;
  }
  pending_.train_loss = nb > 0 ? before / nb : std::nan("");
  pending_.local_loss = na > 0 ? after / na : std::nan("");
  pending_.sampled = static_cast<uint32_t>(pending_.members.size());
  pending_.local_steps = local_steps_;
  pending_.closed_by = closed_by;
  commit_ = std::move(pending_);
  staleness_.swap(pending_staleness_);
  ++version_;
  begin_step();
}

RoundResult AsyncServer::result(uint32_t agent) const {
  RoundResult r;
  r.id = RoundId{algorithm_, run_, agent < agents_ ? last_job_[agent] : 0};
  r.included = agent < agents_ && included_[agent] != 0;
  return r;
}

}  // namespace fedrt::protocol
