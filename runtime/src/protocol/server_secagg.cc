#include "fedrt/protocol/server_secagg.h"

#include <algorithm>

#include <fmt/format.h>

#include "fedrt/core/rng.h"

namespace fedrt::protocol {

Status ServerSecAgg::begin(const task::Task& task, const RoundId& id, const std::vector<uint32_t>& sampled,
                           uint32_t dim, uint32_t bits) {
  id_ = id;
  agent_of_ = sampled;
  const uint32_t agents = task.problem.agents;
  id_of_.assign(agents, -1);
  for (uint32_t u = 0; u < sampled.size(); ++u) id_of_[sampled[u]] = static_cast<int>(u);
  p_ = secagg::RoundParams{};
  p_.n = static_cast<uint32_t>(sampled.size());
  p_.dim = dim;
  p_.bits = bits;
  range_checked_ = !task.privacy.distributed;  // distributed DP's integers live in their own group (privacy/ddg_codec.h)
  const uint64_t top = bits >= 1 && bits <= 31 ? (uint64_t{1} << bits) - 1 : 0;
  if (range_checked_ && static_cast<uint64_t>(p_.n) * top > kHonestSumMax)
    return Status(StatusCode::kInvalidArgument, fmt::format(
        "secure aggregation: {} inputs of {} bits can reach 2^31: the server keeps one bit of headroom below "
        "Z_(2^32) to detect out-of-range inputs (bits + log2 n <= 31, docs/security.md); lower compression.bits",
        p_.n, bits));
  p_.round_id = static_cast<uint64_t>(id.algorithm) << 48 | static_cast<uint64_t>(id.run) << 32 | id.round;
  p_.graph_seed = Mix64(task.seed ^ Mix64(p_.round_id + 0x6EA9));  // public
  secagg::DefaultGraph(p_.n, p_.k, p_.t, std::max(0.2, task.secagg.dropout));
  if (task.secagg.neighbours > 0 && task.secagg.neighbours < p_.k) {
    p_.k = task.secagg.neighbours;
    p_.t = (p_.k + 1) / 2 + 1;
  }
  expected_.assign(p_.n, 1);
  answered_.assign(p_.n, 0);
  left_.assign(p_.n, 0);
  sum_.clear();
  up_ = down_ = 0;
  phase_ = 1;
  return server_.begin(p_);
}

SecAggRound ServerSecAgg::params_for(uint32_t agent) const {
  SecAggRound r;
  if (!member(agent)) return r;
  r.enabled = true;
  r.round_id = p_.round_id;
  r.graph_seed = p_.graph_seed;
  r.n = p_.n;
  r.k = p_.k;
  r.t = p_.t;
  r.id = static_cast<uint32_t>(id_of_[agent]);
  return r;
}

Status ServerSecAgg::on_message(uint32_t agent, int phase, const RoundId& id, const SecAggAdvertiseMsg* ad,
                                const SecAggSharesMsg* sh, const SecAggMaskedMsg* ma, const SecAggCheckMsg* ch,
                                const SecAggUnmaskMsg* un) {
  if (phase_ == 0 || id != id_) return Status(StatusCode::kAborted, "secure aggregation message for another round");
  if (!member(agent)) return Status::FailedPrecondition("not sampled in this round");
  const uint32_t u = static_cast<uint32_t>(id_of_[agent]);
  if (phase != phase_ || !expected_[u])
    return Status(StatusCode::kAborted,
                  fmt::format("secure aggregation phase {} message while phase {} is open (or this device left the round)",
                              phase, phase_));
  if (answered_[u]) return Status(StatusCode::kAlreadyExists, "this phase already has this device's message");
  Status st = Status::Ok();
  uint64_t bytes = 0;
  if (phase == 1) {
    secagg::Advertise a = ad->keys;
    a.id = u;
    st = server_.on_advertise(a);
    bytes = secagg::kAdvertiseBytes;
  } else if (phase == 2) {
    if (sh->shares.size > secagg::kMaxNeighbours) return Status::InvalidArgument("more share ciphertexts than neighbours");
    cts_.assign(sh->shares.data, sh->shares.data + sh->shares.size);
    for (auto& c : cts_) c.from = u;
    st = server_.on_shares(u, cts_.data(), cts_.size());
    bytes = cts_.size() * secagg::kShareCiphertextBytes;
  } else if (phase == 3) {
    if (ma->masked.size != p_.dim)
      return Status(StatusCode::kOutOfRange,
                    fmt::format("masked input has {} values, expected {}", ma->masked.size, p_.dim));
    st = server_.on_masked(u, ma->masked.data);
    bytes = 4ull * p_.dim;
  } else if (phase == 4) {
    if (ch->tags.size > secagg::kMaxNeighbours) return Status::InvalidArgument("more consistency tags than neighbours");
    tags_.assign(ch->tags.data, ch->tags.data + ch->tags.size);
    for (auto& t : tags_) t.from = u;
    st = server_.on_check(u, tags_.data(), tags_.size());
    bytes = tags_.size() * secagg::kConsistencyTagBytes;
  } else {
    if (un->shares.size > secagg::kMaxNeighbours + 1) return Status::InvalidArgument("more unmask shares than neighbours + 1");
    std::vector<secagg::UnmaskShare> shares(un->shares.data, un->shares.data + un->shares.size);
    for (auto& s : shares) s.from = u;
    st = server_.on_unmask(u, shares.data(), shares.size());
    bytes = shares.size() * secagg::kUnmaskShareBytes;
  }
  if (!st.ok()) {
    expected_[u] = 0;  // the state machine refused it: this device leaves the round
    return Status(StatusCode::kInvalidArgument, std::string(st.message()));
  }
  answered_[u] = 1;
  up_ += bytes;
  return Status::Ok();
}

Status ServerSecAgg::on_masked_sum(const std::vector<uint32_t>& agents, const uint32_t* ysum, uint32_t dim) {
  if (phase_ != 3) return Status(StatusCode::kAborted, fmt::format("masked inputs while phase {} is open", phase_));
  if (dim != p_.dim)
    return Status(StatusCode::kOutOfRange, fmt::format("masked sum has {} values, expected {}", dim, p_.dim));
  std::vector<uint32_t> ids;
  for (uint32_t a : agents) {
    if (!member(a)) return Status(StatusCode::kFailedPrecondition, fmt::format("agent {} is not sampled in this round", a));
    const uint32_t u = static_cast<uint32_t>(id_of_[a]);
    if (!expected_[u]) return Status(StatusCode::kAborted, fmt::format("agent {} left the round", a));
    if (answered_[u]) return Status(StatusCode::kAlreadyExists, fmt::format("agent {} already sent its masked input", a));
    ids.push_back(u);
  }
  FEDRT_TRY(server_.on_masked_sum(ids.data(), ids.size(), ysum));
  for (uint32_t u : ids) answered_[u] = 1;
  up_ += 4ull * p_.dim * ids.size();  // what their masked inputs would have cost one by one
  return Status::Ok();
}

void ServerSecAgg::on_disconnect(uint32_t agent) {
  if (phase_ == 0 || phase_ == 6 || !member(agent)) return;
  const uint32_t u = static_cast<uint32_t>(id_of_[agent]);
  if (phase_ >= 2 || answered_[u]) {  // after the keys are advertised a lost connection is a dropout
    left_[u] = 1;
    expected_[u] = answered_[u];  // an answer it already gave still counts in this phase
  }
}

bool ServerSecAgg::phase_complete() const {
  if (phase_ < 1 || phase_ > 5) return false;
  for (uint32_t u = 0; u < p_.n; ++u)
    if (expected_[u] && !answered_[u]) return false;
  return true;
}

void ServerSecAgg::waiting_for(std::vector<uint32_t>& out) const {
  out.clear();
  for (uint32_t u = 0; u < p_.n && phase_ >= 1 && phase_ <= 5; ++u)
    if (expected_[u] && !answered_[u]) out.push_back(agent_of_[u]);
}

uint32_t ServerSecAgg::answered() const {
  uint32_t n = 0;
  for (char a : answered_) n += a ? 1u : 0u;
  return n;
}

Status ServerSecAgg::advance(std::vector<uint32_t>& notify) {
  notify.clear();
  Status st = Status::Ok();
  switch (phase_) {
    case 1: st = server_.close_advertise(); break;
    case 2: st = server_.close_shares(); break;
    case 3: st = server_.close_masked(); break;
    case 4: st = server_.close_check(); break;
    case 5: st = server_.finish(sum_); break;
    default: return Status::FailedPrecondition("secure aggregation: no phase open");
  }
  if (!st.ok()) {
    phase_ = 0;
    return st;
  }
  if (phase_ == 5) {
    phase_ = 6;
    return Status::Ok();
  }
  for (uint32_t u = 0; u < p_.n; ++u) {
    expected_[u] = answered_[u] && !left_[u];
    if (expected_[u]) notify.push_back(agent_of_[u]);
  }
  std::fill(answered_.begin(), answered_.end(), 0);
  ++phase_;
  return Status::Ok();
}

SecAggKeysMsg ServerSecAgg::keys_for(uint32_t agent) {
  ads_ = server_.neighbour_ads(static_cast<uint32_t>(id_of_[agent]));
  down_ += ads_.size() * secagg::kAdvertiseBytes;
  return SecAggKeysMsg{id_, View<secagg::Advertise>{ads_.data(), static_cast<uint32_t>(ads_.size())}};
}

SecAggSharesMsg ServerSecAgg::shares_for(uint32_t agent) {
  cts_ = server_.shares_for(static_cast<uint32_t>(id_of_[agent]));
  down_ += cts_.size() * secagg::kShareCiphertextBytes;
  return SecAggSharesMsg{id_, View<secagg::ShareCiphertext>{cts_.data(), static_cast<uint32_t>(cts_.size())}};
}

SecAggUnmaskRequestMsg ServerSecAgg::survivors_for(uint32_t agent) {
  surv_ = server_.survivors_for(static_cast<uint32_t>(id_of_[agent]));
  down_ += 4ull * surv_.size();
  return SecAggUnmaskRequestMsg{id_, View<uint32_t>{surv_.data(), static_cast<uint32_t>(surv_.size())}};
}

SecAggCheckMsg ServerSecAgg::checks_for(uint32_t agent) {
  tags_ = server_.checks_for(static_cast<uint32_t>(id_of_[agent]));
  down_ += tags_.size() * secagg::kConsistencyTagBytes;
  return SecAggCheckMsg{id_, View<secagg::ConsistencyTag>{tags_.data(), static_cast<uint32_t>(tags_.size())}};
}

std::vector<uint32_t> ServerSecAgg::contributors() const {
  std::vector<uint32_t> out;
  for (uint32_t u : server_.contributors()) out.push_back(agent_of_[u]);
  return out;
}

int64_t ServerSecAgg::first_out_of_range() const {
  if (!range_checked_ || sum_.empty()) return -1;
  const uint64_t honest = static_cast<uint64_t>(server_.contributors().size()) * ((uint64_t{1} << p_.bits) - 1);
  for (size_t i = 0; i < sum_.size(); ++i)
    if (sum_[i] > honest) return static_cast<int64_t>(i);
  return -1;
}

std::vector<uint32_t> ServerSecAgg::cheaters() const {
  std::vector<uint32_t> out;
  for (uint32_t u : server_.cheaters()) out.push_back(agent_of_[u]);
  return out;
}

}  // namespace fedrt::protocol
