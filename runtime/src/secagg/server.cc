// Server state machine of SecAgg+ (host code).
#include "fedrt/secagg/server.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/secagg/shamir.h"
#include "fedrt/secagg/shamir_decode.h"

namespace fedrt::secagg {

Status SecAggServer::fail(Status st) {
  phase_ = Phase::kFailed;
  return st;
}

Status SecAggServer::begin(const RoundParams& p) {
  FEDRT_TRY(ValidateParams(p));
  p_ = p;
  ads_.assign(p.n, Advertise{});
  u1_.assign(p.n, 0);
  u2_.assign(p.n, 0);
  u3_.assign(p.n, 0);
  u4_.assign(p.n, 0);
  checked_ = false;
  tags_in_.assign(p.n, {});
  unmasked_.assign(p.n, 0);
  nbrs_.assign(p.n, {});
  uint32_t buf[kMaxNeighbours];
  for (uint32_t u = 0; u < p.n; ++u) {
    const uint32_t c = Neighbours(p, u, buf);
    nbrs_[u].assign(buf, buf + c);
  }
  inbox_.assign(p.n, {});
  held_.assign(p.n, {});
  off_.clear();
  sum_.assign(p.dim, 0u);
  phase_ = Phase::kAdvertise;
  return Status::Ok();
}

uint32_t SecAggServer::count(int set) const {
  const std::vector<uint8_t>& s = set == 1 ? u1_ : set == 2 ? u2_ : set == 3 ? u3_ : u4_;
  return static_cast<uint32_t>(std::count(s.begin(), s.end(), uint8_t{1}));
}

Status SecAggServer::on_advertise(const Advertise& a) {
  if (phase_ != Phase::kAdvertise) return Status::FailedPrecondition("secagg server: advertisement outside round 0");
  if (a.id >= p_.n) return Status::InvalidArgument("secagg server: advertisement from an unknown device id");
  if (u1_[a.id]) return Status::InvalidArgument("secagg server: duplicate advertisement");
  ads_[a.id] = a;
  u1_[a.id] = 1;
  return Status::Ok();
}

Status SecAggServer::close_advertise() {
  if (phase_ != Phase::kAdvertise) return Status::FailedPrecondition("secagg server: round 0 already closed");
  if (count(1) < p_.t + 1)
    return fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("secure aggregation round {}: only {} of {} devices advertised keys (need more than t = {})",
                                   p_.round_id, count(1), p_.n, p_.t)));
  phase_ = Phase::kShares;
  return Status::Ok();
}

std::vector<Advertise> SecAggServer::neighbour_ads(uint32_t id) const {
  std::vector<Advertise> out;
  if (id >= p_.n) return out;
  for (uint32_t v : nbrs_[id])
    if (u1_[v]) out.push_back(ads_[v]);
  return out;
}

Status SecAggServer::on_shares(uint32_t from, const ShareCiphertext* cts, size_t count) {
  if (phase_ != Phase::kShares) return Status::FailedPrecondition("secagg server: shares outside round 1");
  if (from >= p_.n || !u1_[from]) return Status::InvalidArgument("secagg server: shares from a device that did not advertise");
  if (u2_[from]) return Status::InvalidArgument("secagg server: duplicate share message");
  size_t expect = 0;
  for (uint32_t v : nbrs_[from]) expect += u1_[v];
  if (count != expect)
    return Status::InvalidArgument("secagg server: a device must send exactly one share to each advertised neighbour");
  std::vector<uint8_t> seen(p_.n, 0);
  for (size_t i = 0; i < count; ++i) {
    const ShareCiphertext& c = cts[i];
    if (c.from != from) return Status::InvalidArgument("secagg server: share envelope names another sender");
    if (c.to >= p_.n || !u1_[c.to] || !std::binary_search(nbrs_[from].begin(), nbrs_[from].end(), c.to) || seen[c.to])
      return Status::InvalidArgument("secagg server: share addressed to a device that is not an advertised neighbour");
    seen[c.to] = 1;
  }
  for (size_t i = 0; i < count; ++i) inbox_[cts[i].to].push_back(cts[i]);
  u2_[from] = 1;
  return Status::Ok();
}

Status SecAggServer::close_shares() {
  if (phase_ != Phase::kShares) return Status::FailedPrecondition("secagg server: round 1 not open");
  // Shares from devices that did not complete round 1 are never delivered.
  for (uint32_t v = 0; v < p_.n; ++v)
    inbox_[v].erase(std::remove_if(inbox_[v].begin(), inbox_[v].end(),
                                   [&](const ShareCiphertext& c) { return !u2_[c.from]; }),
                    inbox_[v].end());
  if (count(2) < p_.t + 1)
    return fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("secure aggregation round {}: only {} devices completed key sharing (need more than t = {})",
                                   p_.round_id, count(2), p_.t)));
  phase_ = Phase::kMasked;
  return Status::Ok();
}

std::vector<ShareCiphertext> SecAggServer::shares_for(uint32_t id) const {
  if (id >= p_.n || !u2_[id]) return {};
  return inbox_[id];
}

Status SecAggServer::on_masked(uint32_t from, const uint32_t* y) {
  if (phase_ != Phase::kMasked) return Status::FailedPrecondition("secagg server: masked input outside round 2");
  if (from >= p_.n || !u2_[from]) return Status::InvalidArgument("secagg server: masked input from a device that did not share keys");
  if (u3_[from]) return Status::InvalidArgument("secagg server: duplicate masked input");
  for (uint32_t i = 0; i < p_.dim; ++i) sum_[i] += y[i];  // wraps mod 2^32 by design
  u3_[from] = 1;
  return Status::Ok();
}

Status SecAggServer::on_masked_sum(const uint32_t* ids, size_t count, const uint32_t* ysum) {
  if (phase_ != Phase::kMasked) return Status::FailedPrecondition("secagg server: masked input outside round 2");
  std::vector<char> seen(p_.n, 0);
  for (size_t j = 0; j < count; ++j) {
    const uint32_t from = ids[j];
    if (from >= p_.n || !u2_[from]) return Status::InvalidArgument("secagg server: masked input from a device that did not share keys");
    if (u3_[from] || seen[from]) return Status::InvalidArgument("secagg server: duplicate masked input");
    seen[from] = 1;
  }
  for (uint32_t i = 0; i < p_.dim; ++i) sum_[i] += ysum[i];  // wraps mod 2^32 by design
  for (size_t j = 0; j < count; ++j) u3_[ids[j]] = 1;
  return Status::Ok();
}

Status SecAggServer::close_masked() {
  if (phase_ != Phase::kMasked) return Status::FailedPrecondition("secagg server: round 2 not open");
  if (count(3) < p_.t)
    return fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("secure aggregation round {}: only {} masked inputs arrived, fewer than t = {}",
                                   p_.round_id, count(3), p_.t)));
  phase_ = Phase::kUnmask;
  return Status::Ok();
}

std::vector<uint32_t> SecAggServer::survivors_for(uint32_t id) const {
  std::vector<uint32_t> out;
  if (id >= p_.n || !u3_[id]) return out;
  for (uint32_t v : nbrs_[id])
    if (u3_[v]) out.push_back(v);
  out.insert(std::upper_bound(out.begin(), out.end(), id), id);
  return out;
}

Status SecAggServer::on_check(uint32_t from, const ConsistencyTag* tags, size_t count) {
  if (phase_ != Phase::kUnmask || checked_)
    return Status::FailedPrecondition("secagg server: consistency tags outside the check");
  if (from >= p_.n || !u3_[from]) return Status::InvalidArgument("secagg server: consistency tags from a device that is not a survivor");
  if (u4_[from]) return Status::InvalidArgument("secagg server: duplicate consistency tags");
  // One tag to each neighbour whose shares it received (inbox_: at most k, so
  // the checks cost O(k^2) per device, not O(n) as a table over all devices would).
  const std::vector<ShareCiphertext>& in = inbox_[from];
  if (count != in.size())
    return Status::InvalidArgument("secagg server: a survivor must send one consistency tag to each neighbour that shared with it");
  for (size_t i = 0; i < count; ++i) {
    const ConsistencyTag& t = tags[i];
    bool shared = false, twice = false;
    for (const ShareCiphertext& c : in) shared = shared || c.from == t.to;
    for (size_t j = 0; j < i; ++j) twice = twice || tags[j].to == t.to;
    if (t.from != from || !shared || twice)
      return Status::InvalidArgument("secagg server: consistency tag addressed to a device that did not share with the sender");
  }
  for (size_t i = 0; i < count; ++i) tags_in_[tags[i].to].push_back(tags[i]);
  u4_[from] = 1;
  return Status::Ok();
}

Status SecAggServer::close_check() {
  if (phase_ != Phase::kUnmask || checked_) return Status::FailedPrecondition("secagg server: no consistency check open");
  if (count(4) < p_.t)
    return fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("secure aggregation round {}: only {} survivors sent consistency tags, fewer than t = {}",
                                   p_.round_id, count(4), p_.t)));
  for (auto& in : tags_in_)
    std::sort(in.begin(), in.end(), [](const ConsistencyTag& a, const ConsistencyTag& b) { return a.from < b.from; });
  checked_ = true;
  return Status::Ok();
}

std::vector<ConsistencyTag> SecAggServer::checks_for(uint32_t id) const {
  if (id >= p_.n || !u4_[id] || !checked_) return {};
  return tags_in_[id];  // all from U4 (on_check accepts only survivors' tags)
}

Status SecAggServer::on_unmask(uint32_t from, const UnmaskShare* shares, size_t count) {
  if (phase_ != Phase::kUnmask) return Status::FailedPrecondition("secagg server: unmask shares outside round 3");
  if (from >= p_.n || !u3_[from]) return Status::InvalidArgument("secagg server: unmask shares from a device that is not a survivor");
  if (checked_ && !u4_[from])
    return Status::InvalidArgument("secagg server: unmask shares from a device that sent no consistency tags");
  if (unmasked_[from]) return Status::InvalidArgument("secagg server: duplicate unmask message");
  std::vector<uint8_t> seen(p_.n, 0);
  for (size_t i = 0; i < count; ++i) {
    const UnmaskShare& s = shares[i];
    if (s.from != from || s.about >= p_.n || !u2_[s.about] || seen[s.about] ||
        (s.about != from && !std::binary_search(nbrs_[from].begin(), nbrs_[from].end(), s.about)))
      return Status::InvalidArgument("secagg server: unmask share about a device that did not share with the sender");
    const ShareKind want = u3_[s.about] ? ShareKind::kSelfSeed : ShareKind::kMaskKey;
    if (s.kind != want) return Status::InvalidArgument("secagg server: unmask share of the wrong kind");
    if (s.x != HolderX(p_, s.about, from))  // public: a device cannot claim another holder's point
      return Status::InvalidArgument("secagg server: unmask share with the wrong x-coordinate");
    seen[s.about] = 1;
  }
  for (size_t i = 0; i < count; ++i) {
    Held h;
    h.from = from;
    h.x = shares[i].x;
    std::memcpy(h.share, shares[i].share, kKeyBytes);
    held_[shares[i].about].push_back(h);
  }
  unmasked_[from] = 1;
  return Status::Ok();
}

Status SecAggServer::finish(std::vector<uint32_t>& sum) {
  if (phase_ != Phase::kUnmask) return Status::FailedPrecondition("secagg server: nothing to unmask");
  std::vector<uint8_t> xs, ys;
  auto combine = [&](uint32_t u, uint8_t* secret) -> Status {
    const auto& h = held_[u];
    if (h.size() < p_.t) {
      uint32_t alive = 0;
      for (uint32_t v : nbrs_[u]) alive += unmasked_[v];
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("secure aggregation round {}: cannot remove the {} of device {}: {} of the t = {} shares "
                                "arrived ({} of its {} neighbours answered in round 3); the round is dropped",
                                p_.round_id, u3_[u] ? "self mask" : "pairwise masks", u, h.size(), p_.t, alive,
                                nbrs_[u].size()));
    }
    xs.clear();
    ys.clear();
    for (const Held& s : h) {
      xs.push_back(s.x);
      ys.insert(ys.end(), s.share, s.share + kKeyBytes);
    }
    Status st = ShamirCombine(xs.data(), ys.data(), h.size(), kKeyBytes, p_.t, secret);
    if (st.code() == StatusCode::kDataLoss) {
      // Some shares are off the polynomial: locate them (up to (m - t) / 2), drop them, name their senders.
      std::vector<size_t> off;
      st = ShamirDecode(xs.data(), ys.data(), h.size(), kKeyBytes, p_.t, secret, off);
      if (st.ok())
        for (size_t i : off) off_.push_back(OffShare{h[i].from, u, u3_[u] ? ShareKind::kSelfSeed : ShareKind::kMaskKey});
    }
    if (!st.ok())
      return Status(st.code(), fmt::format("secure aggregation round {}: shares of device {}: {}", p_.round_id, u, st.message()));
    return Status::Ok();
  };
  uint8_t secret[kKeyBytes];
  for (uint32_t u = 0; u < p_.n; ++u) {
    if (!u2_[u]) continue;
    if (!u3_[u] && std::none_of(nbrs_[u].begin(), nbrs_[u].end(), [&](uint32_t v) { return u3_[v] != 0; }))
      continue;  // dropped, and so did every neighbour that masked with it: nothing to remove
    Status st = combine(u, secret);
    if (!st.ok()) return fail(st);
    if (u3_[u]) {
      st = AddSelfMask(p_, secret, -1, sum_.data());
    } else {
      uint8_t pk[kKeyBytes];  // the reconstructed s_sk must match the advertised s_pk
      st = X25519Public(secret, pk);
      if (st.ok() && std::memcmp(pk, ads_[u].s_pk, kKeyBytes) != 0)
        st = Status(StatusCode::kDataLoss,
                    fmt::format("secure aggregation round {}: reconstructed key of device {} does not match its advertised key",
                                p_.round_id, u));
      // Each surviving neighbour v added (u > v ? + : -) PRG(s_uv); take it out.
      for (uint32_t v : nbrs_[u]) {
        if (!st.ok()) break;
        if (u3_[v]) st = AddPairMask(p_, secret, ads_[v].s_pk, u > v ? -1 : +1, sum_.data());
      }
    }
    Wipe(secret, sizeof secret);
    if (!st.ok()) return fail(st);
  }
  sum = sum_;
  phase_ = Phase::kDone;
  return Status::Ok();
}

std::vector<uint32_t> SecAggServer::cheaters() const {
  // A holder off the polynomial in two or more sharings lied in round 3; a dealer
  // with two or more wrong shares from holders not so named lied in round 1.
  std::vector<uint32_t> by_holder(p_.n, 0), by_dealer(p_.n, 0);
  for (const OffShare& o : off_) ++by_holder[o.holder];
  for (const OffShare& o : off_)
    if (by_holder[o.holder] < 2 && o.holder != o.about) ++by_dealer[o.about];
  std::vector<uint32_t> out;
  for (uint32_t u = 0; u < p_.n; ++u)
    if (by_holder[u] >= 2 || by_dealer[u] >= 2) out.push_back(u);
  return out;
}

std::vector<uint32_t> SecAggServer::contributors() const {
  std::vector<uint32_t> out;
  for (uint32_t u = 0; u < p_.n; ++u)
    if (u3_[u]) out.push_back(u);
  return out;
}

}  // namespace fedrt::secagg
