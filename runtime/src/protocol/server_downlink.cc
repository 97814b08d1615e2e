// ServerSession's compressed downlink (docs/architecture.md, "Downlink"):
// xhat moves by the coded difference at every close, and an announcement
// carries the last close's delta to an agent known to hold the version
// before it.
#include "fedrt/protocol/server_session.h"

#include "fedrt/core/rng.h"

namespace fedrt::protocol {

namespace {
constexpr uint64_t kServerRngAgent = 0xFFFFFFFFull;  // key of the broadcast's compression stream
}  // namespace

// The agents' model follows xhat <- xhat + Q(broadcast_{t+1} - xhat): one
// encoded copy per chain, decoded as every agent decodes it (its bits count
// when it is announced).
void ServerSession::compress_broadcast() {
  const int seg = core_.segment_dim();
  for (uint32_t k = 0; k < core_.chains(); ++k) {
    const double* target = core_.broadcast() + static_cast<size_t>(k) * seg;
    double* xh = xhat_.data() + static_cast<size_t>(k) * seg;
    for (int i = 0; i < seg; ++i) down_g_[i] = target[i] - xh[i];
    CounterRng rng(task_.seed, id_.run, kServerRngAgent, id_.round, RngStream::kCompression);
    auto n = down_[k].encode(down_g_.data(), rng, down_wire_.data(), down_wire_.size(), down_g_.data());
    if (!n.ok()) return;  // cannot fail: the buffer holds the longest payload
    const double* m = down_[k].message();
    // xhat <- xhat + alpha Q(x - xhat), alpha = 1 / (1 + omega): without the
    // damping a quantizer with omega > 1 makes ||x - xhat|| grow.
    const double alpha = compression::ControlVariateStep(task_.compression.quantizer, seg);
    for (int i = 0; i < seg; ++i) xh[i] += alpha * m[i];
    down_delta_[k].assign(down_wire_.begin(), down_wire_.begin() + static_cast<long>(*n));
  }
  core_.complete_broadcast(xhat_.data());  // EM: xhat's parameters T(xhat), as the devices compute them
  ++down_version_;
}

// Whether agent c's announcement carries the last close's delta (it holds
// the version before it) rather than xhat whole.
bool ServerSession::sends_delta(uint32_t agent) const {
  return downlink_ && id_.round != kInitRound && down_version_ > 0 && agent < synced_.size() &&
         synced_[agent] == static_cast<int64_t>(down_version_) - 1;
}

}  // namespace fedrt::protocol
