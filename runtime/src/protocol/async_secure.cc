// AsyncServer under SecAgg+ (protocol/async_server.h, docs/async.md): one
// secure group per buffer, formed from the first K receipts, run phase by
// phase like a synchronous secure round (protocol/server_secagg.h), each
// member's messages tagged with its own job's id.
#include <algorithm>

#include <fmt/format.h>

#include "fedrt/protocol/async_server.h"

namespace fedrt::protocol {

Arrival AsyncServer::on_receipt(uint32_t agent, const Update& u, uint32_t staleness) {
  Arrival r;
  r.staleness = staleness;
  if (u.segments != 1 || u.payload[0].size != 0) {
    r.verdict = Verdict{Refusal::kMalformed, "a secure task's update must be a receipt (one empty segment): the "
                                             "update itself goes masked in its buffer's SecAgg+ round"};
    return r;
  }
  const uint32_t job = job_[agent];
  job_[agent] = kNoJob;
  --out_;
  if (staleness > async_.max_staleness) {
    r.dropped = true;
    ++dropped_;
    return r;
  }
  r.weight = StalenessWeight(staleness, async_.staleness_exponent);
  held_[agent] = 1;
  waiting_.push_back(Held{agent, job, staleness, r.weight, u.report, u.sample_count});
  const uint32_t before = version_;
  if (!group_open() && waiting_.size() >= async_.buffer && !done()) form_group();
  r.stepped = version_ != before;
  return r;
}

void AsyncServer::form_group() {
  group_.assign(waiting_.begin(), waiting_.begin() + async_.buffer);
  waiting_.erase(waiting_.begin(), waiting_.begin() + async_.buffer);
  std::sort(group_.begin(), group_.end(), [](const Held& a, const Held& b) { return a.agent < b.agent; });
  std::vector<uint32_t> agents;
  for (const Held& h : group_) agents.push_back(h.agent);
  const uint32_t dim = core_.chains() * static_cast<uint32_t>(core_.segment_dim());
  const Status st = secagg_.begin(task_, RoundId{algorithm_, run_, groups_++}, agents, dim, task_.compression.quantizer.bits);
  if (!st.ok()) {
    settle_group({});  // nobody's input is taken; the members' results say so
    return;
  }
  for (const Held& h : group_) {
    outbox_.push_back(Outgoing{h.agent, MessageKind::kAnnouncement});
    pending_.bits_down += static_cast<uint64_t>(core_.broadcast_dim()) * 64;
  }
}

bool AsyncServer::next_outgoing(Outgoing& out) {
  if (outbox_head_ >= outbox_.size()) {
    outbox_.clear();
    outbox_head_ = 0;
    return false;
  }
  out = outbox_[outbox_head_++];
  return true;
}

ServerMessage AsyncServer::message(const Outgoing& out) {
  ServerMessage m;
  m.kind = out.kind;
  const uint32_t c = out.agent;
  const RoundId job{algorithm_, run_, c < agents_ ? last_job_[c] : 0};
  double weight = 0;
  for (const Held& h : group_)
    if (h.agent == c) weight = h.weight < 1 ? h.weight : 0;
  switch (out.kind) {
    case MessageKind::kAnnouncement: {  // the held job again, now with its group's secure round
      Announcement& a = m.announcement;
      a.id = job;
      a.kind = WorkKind::kLocalWork;
      a.local_steps = local_steps_;
      a.report = true;
      a.model = View<double>{core_.broadcast(), static_cast<uint32_t>(core_.broadcast_dim())};
      a.secagg = secagg_.params_for(c);
      a.weight = weight;
      break;
    }
    case MessageKind::kSecAggKeys: m.keys = secagg_.keys_for(c); m.keys.id = job; break;
    case MessageKind::kSecAggSharesIn: m.shares = secagg_.shares_for(c); m.shares.id = job; break;
    case MessageKind::kSecAggUnmaskRequest: m.unmask_request = secagg_.survivors_for(c); m.unmask_request.id = job; break;
    case MessageKind::kSecAggChecks: m.checks = secagg_.checks_for(c); m.checks.id = job; break;
    case MessageKind::kRoundResult: m.result = result(c); break;
    default: m.kind = MessageKind::kNone; break;
  }
  return m;
}

Verdict AsyncServer::on_secagg(uint32_t agent, const ClientMessage& m) {
  int phase = 0;
  RoundId id{};
  switch (m.kind) {
    case MessageKind::kSecAggAdvertise: phase = 1, id = m.advertise.id; break;
    case MessageKind::kSecAggShares: phase = 2, id = m.shares.id; break;
    case MessageKind::kSecAggMasked: phase = 3, id = m.masked.id; break;
    case MessageKind::kSecAggCheck: phase = 4, id = m.check.id; break;
    case MessageKind::kSecAggUnmask: phase = 5, id = m.unmask.id; break;
    default: return Verdict{Refusal::kMalformed, "not a SecAgg+ message"};
  }
  const bool member = agent < agents_ && held_[agent] &&
                      std::any_of(group_.begin(), group_.end(), [&](const Held& h) { return h.agent == agent; });
  if (!member || id != RoundId{algorithm_, run_, last_job_[agent]})
    return Verdict{Refusal::kStaleRound, "secure aggregation message for no open group of this device's job"};
  const RoundId group{algorithm_, run_, groups_ - 1};
  const Status st = secagg_.on_message(agent, phase, group, &m.advertise, &m.shares, &m.masked, &m.check, &m.unmask);
  Verdict v;
  if (!st.ok()) {
    v.refusal = st.code() == StatusCode::kAlreadyExists ? Refusal::kDuplicate
                : st.code() == StatusCode::kOutOfRange  ? Refusal::kDimension
                                                        : Refusal::kMalformed;
    v.why = st.message();
  }
  if (group_open() && secagg_.phase_complete()) advance_group();
  return v;
}

void AsyncServer::expire_phase() {
  if (group_open()) advance_group();
}

// Closes phases while they are complete; after unmasking, the step.
void AsyncServer::advance_group() {
  while (group_open()) {
    const Status st = secagg_.advance(notify_);
    if (!st.ok()) return settle_group({});
    if (secagg_.finished()) {
      std::vector<uint32_t> contributors = secagg_.contributors();
      if (secagg_.first_out_of_range() >= 0 || contributors.empty()) return settle_group({});  // an input out of range
      uplink_.start_round();
      uplink_.close(static_cast<uint32_t>(contributors.size()), secagg_.sum().data(), core_.broadcast(), core_);
      return settle_group(contributors);
    }
    const MessageKind kind = secagg_.phase() == 2   ? MessageKind::kSecAggKeys
                             : secagg_.phase() == 3 ? MessageKind::kSecAggSharesIn
                             : secagg_.phase() == 4 ? MessageKind::kSecAggUnmaskRequest
                                                    : MessageKind::kSecAggChecks;
    for (uint32_t a : notify_) outbox_.push_back(Outgoing{a, kind});
    if (!secagg_.phase_complete()) return;
  }
}

// The group's end: with contributors, their weighted sum is in the core and
// the server steps; every member learns whether its update was in it.
void AsyncServer::settle_group(const std::vector<uint32_t>& contributors) {
  for (const Held& h : group_) {
    const bool in = std::find(contributors.begin(), contributors.end(), h.agent) != contributors.end();
    included_[h.agent] = in ? 1 : 0;
    held_[h.agent] = 0;
    if (!in) continue;
    pending_.members.push_back(h.agent);
    pending_staleness_.push_back(h.staleness);
    pending_.samples += h.samples;
    pending_.reports.push_back(h.report);
    pending_.member_samples.push_back(h.samples);
  }
  pending_.bits_up += secagg_.bytes_up() * 8;
  pending_.bits_down += secagg_.bytes_down() * 8;
  std::vector<Held> members;
  members.swap(group_);
  if (!contributors.empty()) finish_step("secagg");
  for (const Held& h : members) outbox_.push_back(Outgoing{h.agent, MessageKind::kRoundResult});
  if (waiting_.size() >= async_.buffer && !done()) form_group();  // not past the run's last step
}

}  // namespace fedrt::protocol
