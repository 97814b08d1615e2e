// In-process SecAgg+ round for tests and benchmarks: device and server state
// machines, messages by value (secagg_round.h).
#include "secagg_round.h"

#include <time.h>

#include <algorithm>
#include <memory>

#include "fedrt/secagg/device.h"
#include "fedrt/secagg/server.h"

namespace fedrt::secagg {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

SimulatedRound RunSimulatedRound(const RoundParams& p, const std::vector<const uint32_t*>& inputs,
                                 const std::vector<DropPoint>& drops, uint64_t entropy_seed, Transcript* transcript,
                                 const std::vector<Cheat>& cheats, const SurvivorLie* lie) {
  SimulatedRound r;
  r.status = ValidateParams(p);
  if (!r.status.ok()) return r;
  if (inputs.size() != p.n || (!drops.empty() && drops.size() != p.n) || (!cheats.empty() && cheats.size() != p.n)) {
    r.status = Status::InvalidArgument("secagg round: need one input (and one drop point, one cheat) per device");
    return r;
  }
  auto cheats_by = [&](uint32_t u, Cheat c) { return !cheats.empty() && cheats[u] == c; };
  auto drops_at = [&](uint32_t u, DropPoint at) { return !drops.empty() && drops[u] != DropPoint::kNone && drops[u] <= at; };
  std::vector<std::unique_ptr<SecAggDevice>> dev(p.n);
  std::vector<double> dev_time(p.n, 0.0);
  std::vector<uint64_t> dev_up(p.n, 0);
  std::vector<uint8_t> alive(p.n, 1);
  auto timed = [&](uint32_t u, auto&& f) {
    const double t0 = ThreadCpuSeconds();
    Status st = f();
    dev_time[u] += ThreadCpuSeconds() - t0;
    if (!st.ok()) {  // a device that errs stops taking part, like a dropout
      alive[u] = 0;
      if (r.device_failures++ == 0) r.first_device_error = st;
    }
    return st;
  };
  SecAggServer server;
  double server_time = 0.0;
  auto serve = [&](auto&& f) {
    const double t0 = ThreadCpuSeconds();
    Status st = f();
    server_time += ThreadCpuSeconds() - t0;
    return st;
  };
  auto finish = [&](Status st) {
    r.status = std::move(st);
    for (uint32_t u = 0; u < p.n; ++u) {
      r.traffic.device_seconds += dev_time[u];
      r.traffic.device_max_seconds = std::max(r.traffic.device_max_seconds, dev_time[u]);
      r.traffic.up_bytes += dev_up[u];
      r.traffic.up_max = std::max(r.traffic.up_max, dev_up[u]);
    }
    r.traffic.server_seconds = server_time;
    return r;
  };
  Status st = serve([&] { return server.begin(p); });
  if (!st.ok()) return finish(st);

  // Round 0: advertise.
  for (uint32_t u = 0; u < p.n; ++u) {
    if (drops_at(u, DropPoint::kBeforeAdvertise)) {
      alive[u] = 0;
      continue;
    }
    dev[u] = std::make_unique<SecAggDevice>();
    Advertise a;
    const DeviceEntropy e = SimulatedEntropy(entropy_seed, p.round_id, u);
    if (!timed(u, [&] { return dev[u]->advertise(p, u, e, a); }).ok()) continue;
    dev_up[u] += kAdvertiseBytes;
    if (transcript) transcript->ads.push_back(a);
    (void)serve([&] { return server.on_advertise(a); });
  }
  st = serve([&] { return server.close_advertise(); });
  if (!st.ok()) return finish(st);

  // Round 1: share keys.
  std::vector<ShareCiphertext> out(kMaxNeighbours);
  for (uint32_t u = 0; u < p.n; ++u) {
    if (!alive[u]) continue;
    std::vector<Advertise> ads;
    (void)serve([&] {
      ads = server.neighbour_ads(u);
      return Status::Ok();
    });
    r.traffic.down_bytes += ads.size() * kAdvertiseBytes;
    if (drops_at(u, DropPoint::kBeforeShares)) {
      alive[u] = 0;
      continue;
    }
    size_t written = 0;
    if (!timed(u, [&] { return dev[u]->share_keys(ads.data(), ads.size(), out.data(), out.size(), written); }).ok()) continue;
    if (cheats_by(u, Cheat::kInconsistentDealing)) {
      // A twin with the same keys and seeds but other Shamir coefficients: its
      // ciphertexts open fine at the neighbours, on another polynomial.
      DeviceEntropy e = SimulatedEntropy(entropy_seed, p.round_id, u);
      e.shamir[0] ^= 0xA5;
      SecAggDevice twin;
      Advertise a;
      std::vector<ShareCiphertext> other(kMaxNeighbours);
      size_t w2 = 0;
      if (twin.advertise(p, u, e, a).ok() && twin.share_keys(ads.data(), ads.size(), other.data(), other.size(), w2).ok())
        for (size_t i = 0; i < 2 && i < written && i < w2; ++i) out[i] = other[i];
    }
    dev_up[u] += written * kShareCiphertextBytes;
    if (transcript) transcript->shares.insert(transcript->shares.end(), out.begin(), out.begin() + written);
    (void)serve([&] { return server.on_shares(u, out.data(), written); });
  }
  st = serve([&] { return server.close_shares(); });
  if (!st.ok()) return finish(st);

  // Round 2: masked input.
  std::vector<uint32_t> y(p.dim);
  for (uint32_t u = 0; u < p.n; ++u) {
    if (!alive[u]) continue;
    const std::vector<ShareCiphertext> in = server.shares_for(u);
    r.traffic.down_bytes += in.size() * kShareCiphertextBytes;
    if (drops_at(u, DropPoint::kBeforeMasked)) {
      alive[u] = 0;
      continue;
    }
    if (!timed(u, [&] { return dev[u]->masked_input(in.data(), in.size(), inputs[u], y.data()); }).ok()) continue;
    dev_up[u] += 4ull * p.dim;
    if (transcript) {
      transcript->masked_from.push_back(u);
      transcript->masked.push_back(y);
    }
    (void)serve([&] { return server.on_masked(u, y.data()); });
  }
  st = serve([&] { return server.close_masked(); });
  if (!st.ok()) return finish(st);

  // Consistency check: each survivor tags its list for its listed neighbours.
  auto told_dropped = [&](uint32_t u) {
    return lie != nullptr && std::find(lie->told_dropped.begin(), lie->told_dropped.end(), u) != lie->told_dropped.end();
  };
  std::vector<ConsistencyTag> tags(kMaxNeighbours);
  std::vector<std::vector<ConsistencyTag>> routed(p.n);  // a lying server routes the tags itself
  for (uint32_t u = 0; u < p.n; ++u) {
    if (!alive[u]) continue;
    std::vector<uint32_t> surv = server.survivors_for(u);
    if (told_dropped(u)) surv.erase(std::remove(surv.begin(), surv.end(), lie->victim), surv.end());
    r.traffic.down_bytes += 4ull * surv.size();
    if (drops_at(u, DropPoint::kBeforeUnmask)) {
      alive[u] = 0;
      continue;
    }
    size_t written = 0;
    if (!timed(u, [&] { return dev[u]->check_survivors(surv.data(), surv.size(), tags.data(), tags.size(), written); }).ok())
      continue;
    dev_up[u] += written * kConsistencyTagBytes;
    if (lie != nullptr) {
      for (size_t i = 0; i < written; ++i)
        if (!lie->suppress || told_dropped(tags[i].from) == told_dropped(tags[i].to)) routed[tags[i].to].push_back(tags[i]);
    } else {
      (void)serve([&] { return server.on_check(u, tags.data(), written); });
    }
  }
  if (lie == nullptr) {
    st = serve([&] { return server.close_check(); });
    if (!st.ok()) return finish(st);
  }

  // Round 3: unmask.
  std::vector<UnmaskShare> shares(kMaxNeighbours + 1);
  for (uint32_t u = 0; u < p.n; ++u) {
    if (!alive[u]) continue;
    const std::vector<ConsistencyTag> in = lie != nullptr ? routed[u] : server.checks_for(u);
    r.traffic.down_bytes += in.size() * kConsistencyTagBytes;
    if (drops_at(u, DropPoint::kAfterCheck)) {
      alive[u] = 0;
      continue;
    }
    size_t written = 0;
    const Status dst =
        timed(u, [&] { return dev[u]->unmask_checked(in.data(), in.size(), shares.data(), shares.size(), written); });
    if (!dst.ok()) {
      if (dst.code() == StatusCode::kAborted) r.detected_lie.push_back(u);
      continue;
    }
    dev_up[u] += written * kUnmaskShareBytes;
    if (cheats_by(u, Cheat::kWrongUnmaskShares))
      for (size_t i = 0; i < written; ++i)
        for (uint8_t& b : shares[i].share) b ^= 0x5A;
    if (transcript) transcript->unmask.insert(transcript->unmask.end(), shares.begin(), shares.begin() + written);
    (void)serve([&] { return server.on_unmask(u, shares.data(), written); });
  }
  st = serve([&] { return server.finish(r.sum); });
  if (st.ok()) r.contributors = server.contributors();
  r.off_shares = server.off_shares();
  r.cheaters = server.cheaters();
  return finish(st);
}

}  // namespace fedrt::secagg
