// ServerSession's partial aggregation (docs/gateways.md, "Partial
// aggregation"): a gateway's session takes its devices' updates as the
// coordinator's would, then hands the round's exact sums up as pieces; the
// coordinator adds them to its own. Every sum is exact, so the coordinator
// holds the bits it would hold had every update come to it.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fedrt/core/exact_sum_pieces.h"
#include "fedrt/protocol/server_session.h"

namespace fedrt::protocol {

namespace {

// Moves every sum of `a` into layers of pieces (the array ends at zero).
Status TakeLayers(ExactSumArray& a, PartialSum& out) {
  const size_t n = a.size();
  out.size = static_cast<uint32_t>(n);
  out.layers.clear();
  double piece[kMaxSumPieces];
  size_t layers = 0;
  for (size_t i = 0; i < n; ++i) {
    const int k = TakeSumPieces(a, i, piece);
    if (k < 0) return Status(StatusCode::kOutOfRange, fmt::format("partial sum: coordinate {} is beyond the double range", i));
    for (; layers < static_cast<size_t>(k); ++layers) out.layers.resize((layers + 1) * n, 0.0);
    for (int j = 0; j < k; ++j) out.layers[static_cast<size_t>(j) * n + i] = piece[j];
  }
  return Status::Ok();
}

}  // namespace

void ServerSession::set_served(uint32_t agent, bool served) {
  if (agent < agents_) served_[agent] = served ? 1 : 0;
}

void ServerSession::basis(RoundBasis& b) const {
  b.id = id_;
  export_state(b.state);
  b.down_version = down_version_;
  b.down_delta.assign(core_.chains(), {});
  if (downlink_)
    for (uint32_t k = 0; k < core_.chains(); ++k) b.down_delta[k] = down_delta_[k];
  b.deadline_ms = deadline_ != kNoDeadline && deadline_ > now_ ? static_cast<uint32_t>(std::min<uint64_t>(deadline_ - now_, 0xFFFFFFFFu)) : 0;
  b.secure = secure_ && id_.round != kInitRound;
  b.refused.clear();
  for (uint32_t c = 0; c < agents_; ++c)
    if (refused_[c]) b.refused.push_back(c);
}

Status ServerSession::open_from(const RoundBasis& b, uint64_t now_ms) {
  if (!partial_) return Status::FailedPrecondition("open_from: not a gateway's session");
  if (b.id.algorithm != id_.algorithm || b.id.run != id_.run)
    return Status::InvalidArgument("open_from: a round of another algorithm or run than this session's");
  if (state_ == State::kClosed) state_ = State::kIdle;  // a verdict that never came: the coordinator moved on
  if (state_ == State::kOpen) close_partial("superseded");
  if (state_ == State::kClosed) state_ = State::kIdle;
  // The same round again (the coordinator restarted before committing it): the updates taken the
  // first time went with the coordinator, so a device's repeat is not a duplicate.
  if (had_round_ && b.id == id_) had_round_ = false;
  FEDRT_TRY(import_state(b.state));
  if (downlink_) {
    if (b.down_delta.size() != core_.chains()) return Status::InvalidArgument("open_from: one downlink delta per chain");
    set_downlink_basis(b.down_version, b.down_delta.data());
  }
  if (b.id.round != kInitRound && needs_initial_exchange()) mark_initial_exchange_done();  // joined later
  size_t r = 0;  // the coordinator's refusals: the same participants, the same SecAgg+ ids
  for (uint32_t c = 0; c < agents_; ++c) {
    const bool refused = r < b.refused.size() && b.refused[r] == c;
    if (refused) ++r;
    refused_[c] = refused ? 1 : 0;
  }
  // The gateway hands its partial up a tenth of the time left before the coordinator's deadline;
  // a secure round's phases are the coordinator's (the gateway relays them).
  deadline_ms_ = b.deadline_ms > 0 && !b.secure ? std::max<uint32_t>(1, b.deadline_ms - b.deadline_ms / 10) : 0;
  return open_round(b.id.round, now_ms);
}

void ServerSession::set_downlink_basis(uint32_t version, const std::vector<uint8_t>* deltas) {
  if (!downlink_) return;
  down_version_ = version;
  for (uint32_t k = 0; k < core_.chains(); ++k) down_delta_[k] = deltas[k];
}

// A gateway's round ends when its agents answered (or at its deadline): the
// cut-off uploads are taken back, and nothing of the server rule runs.
void ServerSession::close_partial(const char* by) {
  for (uint32_t c = 0; c < agents_ && active_uploads_ > 0; ++c)
    if (uploads_[c].active) abort_upload(c);
  if (!taint_.empty()) commit_.failure = taint_;
  if (id_.round == kInitRound) init_done_ = true;
  commit_.closed_by = by;
  std::sort(commit_.members.begin(), commit_.members.end());
  state_ = State::kClosed;
  deadline_ = kNoDeadline;
}

Status ServerSession::export_partial(Partial& p) {
  if (!partial_ || state_ != State::kClosed) return Status::FailedPrecondition("partial: no round closed at this gateway");
  const bool initial = id_.round == kInitRound;
  p = Partial{};
  p.id = id_;
  p.members = commit_.members;
  for (uint32_t c : p.members) {
    p.reports.push_back(reports_[c]);
    p.samples.push_back(samples_[c]);
    if (adaptive_.on() && !initial) p.indicators.push_back(indicator_[c]);
  }
  p.bits_up = commit_.bits_up;
  p.unclipped = commit_.unclipped;
  p.over_norm = commit_.over_norm;
  p.failure = commit_.failure;
  std::vector<ExactSumArray*> sums;
  core_.round_sums(initial, sums);
  if (!initial)
    if (ExactSumArray* m = uplink_.message_sum()) sums.push_back(m);
  p.sums.resize(sums.size());
  for (size_t j = 0; j < sums.size(); ++j) FEDRT_TRY(TakeLayers(*sums[j], p.sums[j]));
  if (!initial && uplink_.mode() == ServerUplink::Mode::kInteger) {
    p.integer_sums = uplink_.integer_sums();
    std::fill(uplink_.integer_sums().begin(), uplink_.integer_sums().end(), 0);
  }
  return Status::Ok();
}

void ServerSession::settle(const std::vector<uint32_t>& included, View<double> model) {
  if (!partial_) return;
  if (state_ == State::kOpen) close_partial("coordinator");
  if (state_ != State::kClosed) return;
  commit_.members = included;
  const bool initial = commit_.id.round == kInitRound;
  if (core_.result_needs_model() && !initial && model.size == result_.size())
    std::copy(model.data, model.data + model.size, result_.begin());
  if (downlink_ && !initial)
    for (uint32_t c : included) synced_[c] = down_version_;
}

Status ServerSession::check_partial(const Partial& p) {
  const bool initial = id_.round == kInitRound;
  const size_t m = p.members.size();
  std::vector<char> seen(agents_, 0);
  auto check_agent = [&](uint32_t c, const char* what) -> Status {
    if (c >= agents_) return Status(StatusCode::kInvalidArgument, fmt::format("{} {} is not an agent of the task", what, c));
    if (!sampled_[c]) return Status(StatusCode::kFailedPrecondition, fmt::format("{} {} is not sampled in this round", what, c));
    if (reported_[c] || seen[c]) return Status(StatusCode::kAlreadyExists, fmt::format("{} {} already answered this round", what, c));
    return Status::Ok();
  };
  for (size_t i = 0; i < m; ++i) {
    if (i > 0 && p.members[i] <= p.members[i - 1]) return Status::InvalidArgument("partial: members are not ascending");
    FEDRT_TRY(check_agent(p.members[i], "member"));
    seen[p.members[i]] = 1;
  }
  for (const auto* list : {&p.unclipped, &p.over_norm})
    for (uint32_t c : *list) {
      FEDRT_TRY(check_agent(c, "dropped device"));
      seen[c] = 1;
    }
  const bool indicators = adaptive_.on() && !initial;
  if (p.reports.size() != m || p.samples.size() != m || p.indicators.size() != (indicators ? m : 0))
    return Status::InvalidArgument("partial: the members' reports, sample counts or clip indicators do not align");
  for (uint8_t b : p.indicators)
    if (b < 1 || b > 2) return Status::InvalidArgument("partial: a clip indicator is not 1 or 2");
  std::vector<ExactSumArray*> sums;
  core_.round_sums(initial, sums);
  if (!initial)
    if (ExactSumArray* ms = uplink_.message_sum()) sums.push_back(ms);
  if (p.sums.size() != sums.size())
    return Status(StatusCode::kInvalidArgument, fmt::format("partial: {} sums, this round keeps {}", p.sums.size(), sums.size()));
  for (size_t j = 0; j < sums.size(); ++j) {
    const PartialSum& s = p.sums[j];
    if (s.size != sums[j]->size() || (s.size == 0 ? !s.layers.empty() : s.layers.size() % s.size != 0) ||
        s.layer_count() > static_cast<uint32_t>(kMaxSumPieces))
      return Status(StatusCode::kOutOfRange, fmt::format("partial: sum {} has {} values for {} coordinates", j, s.layers.size(), sums[j]->size()));
    for (double x : s.layers)
      if (!std::isfinite(x)) return Status(StatusCode::kInvalidArgument, fmt::format("partial: sum {} has a NaN or Inf piece", j));
  }
  const bool integer = !initial && uplink_.mode() == ServerUplink::Mode::kInteger;
  const std::vector<uint64_t>& isum = uplink_.integer_sums();
  if (p.integer_sums.size() != (integer ? isum.size() : 0))
    return Status(StatusCode::kOutOfRange, fmt::format("partial: {} integer sums, this round keeps {}", p.integer_sums.size(),
                                          integer ? isum.size() : 0));
  const uint64_t most = static_cast<uint64_t>(m) * uplink_.max_field();
  for (size_t i = 0; i < p.integer_sums.size(); ++i)
    if (p.integer_sums[i] > most)
      return Status(StatusCode::kOutOfRange, fmt::format("partial: integer sum {} is {}, above the {} that {} members can add", i,
                                            p.integer_sums[i], most, m));
  return Status::Ok();
}

Verdict ServerSession::on_partial(const Partial& p, uint64_t now_ms) {
  now_ = now_ms;
  if (state_ != State::kOpen || p.id != id_)
    return Verdict{Refusal::kStaleRound, fmt::format("partial for round {}: the open round is {}", p.id.round,
                                                     state_ == State::kOpen ? std::to_string(id_.round) : std::string("none"))};
  const bool initial = id_.round == kInitRound;
  if (secure_ && !initial)
    return Verdict{Refusal::kMalformed, "this round uses secure aggregation: a gateway relays its SecAgg+ messages"};
  if (Status st = check_partial(p); !st.ok()) {
    const StatusCode c = st.code();
    const Refusal r = c == StatusCode::kFailedPrecondition ? Refusal::kNotSampled
                      : c == StatusCode::kAlreadyExists    ? Refusal::kDuplicate
                      : c == StatusCode::kOutOfRange       ? Refusal::kDimension
                                                           : Refusal::kMalformed;
    return Verdict{r, st.message()};
  }
  std::vector<ExactSumArray*> sums;
  core_.round_sums(initial, sums);
  if (!initial)
    if (ExactSumArray* ms = uplink_.message_sum()) sums.push_back(ms);
  for (size_t j = 0; j < sums.size(); ++j) {
    const PartialSum& s = p.sums[j];
    for (size_t at = 0; at < s.layers.size(); ++at) sums[j]->add(at % s.size, s.layers[at]);
  }
  const uint32_t m = static_cast<uint32_t>(p.members.size());
  if (initial) {
    core_.refresh_initial();
  } else if (!uplink_.closes_round()) {
    for (uint32_t k = 0; k < core_.chains(); ++k) core_.count_merged(k, m);
  }
  std::vector<uint64_t>& isum = uplink_.integer_sums();
  for (size_t i = 0; i < p.integer_sums.size(); ++i) isum[i] += p.integer_sums[i];
  if (!p.failure.empty() && taint_.empty()) taint_ = p.failure;
  for (uint32_t i = 0; i < m; ++i) {
    const uint32_t c = p.members[i];
    reported_[c] = 1;
    reports_[c] = p.reports[i];
    samples_[c] = p.samples[i];
    if (!p.indicators.empty()) indicator_[c] = p.indicators[i];
    list_report(c);
    commit_.members.push_back(c);
    commit_.samples += p.samples[i];
  }
  commit_.bits_up += p.bits_up;
  for (uint32_t c : p.unclipped) reported_[c] = 1, commit_.unclipped.push_back(c), ++withdrawn_;
  for (uint32_t c : p.over_norm) reported_[c] = 1, commit_.over_norm.push_back(c), ++withdrawn_;
  if (commit_.members.size() + withdrawn_ >= expected_) close(commit_.members.empty() ? "empty" : "all");
  Verdict v;
  v.whole = true;
  return v;
}

Verdict ServerSession::on_masked_sum(const MaskedSum& m, uint64_t now_ms) {
  now_ = now_ms;
  if (state_ != State::kOpen || m.id != id_ || !secure_ || id_.round == kInitRound)
    return Verdict{Refusal::kStaleRound, fmt::format("masked sum for round {}: no secure round {} is open", m.id.round,
                                                     m.id.round)};
  if (m.reports.size() != m.members.size()) return Verdict{Refusal::kMalformed, "masked sum: reports do not align"};
  for (size_t i = 1; i < m.members.size(); ++i)
    if (m.members[i] <= m.members[i - 1]) return Verdict{Refusal::kMalformed, "masked sum: members are not ascending"};
  Status st = secagg_.on_masked_sum(m.members, m.sum.data(), static_cast<uint32_t>(m.sum.size()));
  if (!st.ok()) {
    const StatusCode c = st.code();
    const Refusal r = c == StatusCode::kFailedPrecondition ? Refusal::kNotSampled
                      : c == StatusCode::kAlreadyExists    ? Refusal::kDuplicate
                      : c == StatusCode::kOutOfRange       ? Refusal::kDimension
                                                           : Refusal::kMalformed;
    return Verdict{r, std::string(st.message())};
  }
  for (size_t i = 0; i < m.members.size(); ++i) {
    reports_[m.members[i]] = m.reports[i];
    list_report(m.members[i]);
  }
  if (secagg_.phase_complete()) advance_secagg();
  Verdict v;
  v.whole = true;
  return v;
}

}  // namespace fedrt::protocol
