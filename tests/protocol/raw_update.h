#pragma once
// A plain update sent by hand to a server session (round 0 of algorithm 0,
// run 0): d little-endian float64 values, whole or as a header and 16-byte
// chunks. Shared by the tests of the server's bounds on updates
// (tests/protocol/update_norm_test.cc, tests/privacy/dp_defence_test.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/protocol/server_session.h"

namespace fedrt::protocol::raw_update {

// Device c's update of dimension d: a fixed direction scaled to L2 norm `norm`.
inline std::vector<double> Direction(uint32_t c, double norm, int d) {
  std::vector<double> v(static_cast<size_t>(d));
  double sq = 0;
  for (int i = 0; i < d; ++i) {
    v[i] = std::sin(1.0 + 3.0 * c + i);
    sq += v[i] * v[i];
  }
  for (double& x : v) x *= norm / std::sqrt(sq);
  return v;
}

// Agent c's update x, inline.
inline Verdict Send(ServerSession& s, uint32_t c, const std::vector<double>& x) {
  Update u;
  u.id = RoundId{0, 0, 0};
  u.segments = 1;
  u.payload[0] = View<uint8_t>{reinterpret_cast<const uint8_t*>(x.data()), static_cast<uint32_t>(sizeof(double) * x.size())};
  return s.on_update(c, u, 0);
}

// The same update as a header and chunks of 16 bytes; the last chunk's verdict.
inline Verdict SendChunked(ServerSession& s, uint32_t c, const std::vector<double>& x) {
  const uint64_t bytes = sizeof(double) * x.size();
  Update h;
  h.id = RoundId{0, 0, 0};
  h.segments = 1;
  h.chunked = true;
  h.payload_bytes[0] = bytes;
  Verdict v = s.on_update(c, h, 0);
  EXPECT_TRUE(v.ok()) << v.why;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(x.data());
  for (uint64_t off = 0; off < bytes; off += 16) {
    Chunk ch;
    ch.id = h.id;
    ch.segment = 0;
    ch.offset = off;
    ch.total = bytes;
    ch.data = View<uint8_t>{p + off, static_cast<uint32_t>(std::min<uint64_t>(16, bytes - off))};
    v = s.on_chunk(c, ch, 0);
  }
  return v;
}

// A server session of `so` (its initial iterate: zeros) with every agent
// connected and round 0 open; updates go in through send / send_chunked.
class OpenRound {
 public:
  explicit OpenRound(ServerOptions so) : x0_(so.task.problem.dim, 0.0) {
    so.initial = View<double>{x0_.data(), static_cast<uint32_t>(x0_.size())};
    EXPECT_TRUE(s.init(so).ok());
    for (uint32_t c = 0; c < so.task.problem.agents; ++c) s.set_connected(c, true, 0);
    EXPECT_TRUE(s.open_round(0, 0).ok());
  }
  Verdict send(uint32_t c, const std::vector<double>& x) { return Send(s, c, x); }
  Verdict send_chunked(uint32_t c, const std::vector<double>& x) { return SendChunked(s, c, x); }
  std::vector<double> model() const { return {s.core().model(), s.core().model() + x0_.size()}; }

 private:
  std::vector<double> x0_;  // before s: alive while s runs

 public:
  ServerSession s;
};

}  // namespace fedrt::protocol::raw_update
