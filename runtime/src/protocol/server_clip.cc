// ServerSession's bounds on plain updates. Central DP-FedAvg (docs/privacy.md,
// "DP-FedAvg on the fleet"): without SecAgg+ the server sees each plain
// update, and one whose L2 norm exceeds privacy.clip comes from a device that
// did not clip (lying or broken). Every mode: an update longer than
// robustness.max_update_norm (docs/security.md). Either is dropped from the
// round as if it had not reported: nothing of it reaches the sums, the round
// does not wait for it, and the others' result is the one it would have
// been without it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "fedrt/protocol/server_session.h"

namespace fedrt::protocol {

bool ServerSession::checks_clip() const { return task_.privacy.enabled && !secure_ && id_.round != kInitRound; }

bool OverClip(double norm, double clip, int d) {
  const double tol = std::min(1e-4, (static_cast<double>(d) + 8.0) * 0x1p-24);
  return !(norm <= clip * (1.0 + tol));  // NaN: over (the decoder refuses it anyway)
}

bool ServerSession::over_clip(double norm) const { return OverClip(norm, clip(), core_.dim()); }

namespace {
// sum_i x_i^2 over little-endian float64 values, in index order.
double AddSquares(const uint8_t* p, size_t values, double sq) {
  for (size_t i = 0; i < values; ++i) {
    uint64_t u = 0;
    for (int b = 0; b < 8; ++b) u |= static_cast<uint64_t>(p[8 * i + b]) << (8 * b);
    double x;
    std::memcpy(&x, &u, 8);
    sq += x * x;
  }
  return sq;
}
}  // namespace

double RawUpdateNorm(const Update& u, int d) {
  const uint64_t want = 8ull * static_cast<uint64_t>(d);
  if (u.encoding != Encoding::kRawFloat64 || u.segments != 1 || u.payload[0].size != want)
    return -1;  // not DP-FedAvg's dx: the uplink refuses it
  return std::sqrt(AddSquares(u.payload[0].data, static_cast<size_t>(d), 0.0));
}

double ServerSession::payload_norm(const Update& u) const { return RawUpdateNorm(u, core_.dim()); }

double ServerSession::journal_norm(uint32_t agent, const Update& h) const {
  const uint64_t want = 8ull * static_cast<uint64_t>(core_.dim());
  if (h.encoding != Encoding::kRawFloat64 || h.segments != 1 || h.payload_bytes[0] != want) return -1;
  uint8_t buf[4096];
  double sq = 0;
  for (uint64_t off = 0; off < want;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof buf, want - off));
    if (!journals_[agent]->read(off, buf, n).ok()) return std::numeric_limits<double>::infinity();  // dropped
    sq = AddSquares(buf, n / 8, sq);
    off += n;
  }
  return std::sqrt(sq);
}

Verdict ServerSession::drop_unclipped(uint32_t agent, double norm) {
  (void)norm;  // not in the reason: one line per device in the driver's log, whatever the round
  return drop_update(agent, Refusal::kUnclipped,
                     fmt::format("update longer than privacy.clip {} (L2 norm): the device did not clip; dropped from "
                                 "the round, the others' result is unchanged",
                                 clip()));
}

Verdict ServerSession::drop_update(uint32_t agent, Refusal why, std::string reason) {
  reported_[agent] = 1;  // answered: a second copy is a duplicate, a revocation does not count it again
  (why == Refusal::kUnclipped ? commit_.unclipped : commit_.over_norm).push_back(agent);
  ++withdrawn_;
  if (commit_.members.size() + withdrawn_ >= expected_) close(commit_.members.empty() ? "empty" : "all");
  return Verdict{why, std::move(reason)};
}

// The L2 norm of a streamed raw update (ServerUplink::add_update_squares),
// read back from its journal; infinity when the journal cannot be read.
double ServerSession::journal_update_norm(uint32_t agent, const Update& h) const {
  uint8_t buf[4096];
  double values[sizeof buf / 8];
  double sq = 0;
  uint64_t at = 0;  // the segment's first byte in the journal
  for (uint32_t k = 0; k < h.segments; ++k) {
    for (uint64_t off = 0; off < h.payload_bytes[k];) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof buf, h.payload_bytes[k] - off));
      if (!journals_[agent]->read(at + off, buf, n).ok()) return std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < n / 8; ++i) {
        uint64_t u = 0;
        for (int b = 0; b < 8; ++b) u |= static_cast<uint64_t>(buf[8 * i + b]) << (8 * b);
        std::memcpy(&values[i], &u, 8);
      }
      sq = uplink_.add_update_squares(k, static_cast<int>(off / 8), values, static_cast<int>(n / 8),
                                      announced_model().data, core_, sq);
      off += n;
    }
    at += h.payload_bytes[k];
  }
  return std::sqrt(sq);
}

double DefaultMaxUpdateNorm(const task::Task& task) {
  return std::sqrt(std::numeric_limits<double>::max()) / (static_cast<double>(task.problem.agents) + 1.0);
}

}  // namespace fedrt::protocol
