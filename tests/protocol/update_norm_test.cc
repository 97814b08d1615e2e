// The server's bound on an update's L2 norm (docs/security.md, "What a
// malicious device can do to the model"): an update longer than
// robustness.max_update_norm, or of values whose squares overflow (1e308), is
// dropped from the round as if its device had not reported: the others'
// result is the same bits as a round in which that device left, whether the
// update came whole or in chunks, and the model stays finite.

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/protocol/server_session.h"
#include "raw_update.h"

namespace fedrt {
namespace update_norm_test {

constexpr int kDim = 5;
constexpr uint32_t kAgents = 4;

task::Task PlainTask(task::AlgorithmKind kind, task::ProblemKind problem) {
  task::Task t;
  t.problem.kind = problem;
  t.problem.agents = kAgents;
  t.problem.dim = kDim;
  t.num_algorithms = 1;
  t.algorithms[0] = task::AlgorithmChoice{kind, false};
  t.participation = 1.0;
  return t;
}

// Device c's update: a fixed direction scaled to L2 norm `norm`.
std::vector<double> Direction(uint32_t c, double norm) { return protocol::raw_update::Direction(c, norm, kDim); }

protocol::ServerOptions Options(double bound) {
  protocol::ServerOptions so;
  so.task = PlainTask(task::AlgorithmKind::kFedAvg, task::ProblemKind::kLeastSquares);
  so.max_update_norm = bound;
  return so;
}

class Server : public protocol::raw_update::OpenRound {
 public:
  explicit Server(double bound = 0) : OpenRound(Options(bound)) {}
};

void ExpectSameBits(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(std::isfinite(a[i])) << what << " coordinate " << i;
    EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(double)), 0) << what << " coordinate " << i;
  }
}

// Device 3 sends every value 1e308 (finite, accepted before this bound: the
// sum overflowed to inf and stayed there). Its update is dropped, the round
// closes with the others, and the model is the one of a round device 3 left.
TEST(UpdateNorm, An1e308UpdateIsDroppedAndTheOthersResultIsUnchanged) {
  for (bool chunked : {false, true}) {
    Server liar, left;
    for (uint32_t c = 0; c < 3; ++c) {
      ASSERT_TRUE(liar.send(c, Direction(c, 0.5)).ok());
      ASSERT_TRUE(left.send(c, Direction(c, 0.5)).ok());
    }
    const std::vector<double> poison(kDim, 1e308);
    const protocol::Verdict v = chunked ? liar.send_chunked(3, poison) : liar.send(3, poison);
    EXPECT_EQ(v.refusal, protocol::Refusal::kOverNorm) << v.why;
    EXPECT_NE(v.why.find("robustness.max_update_norm"), std::string::npos) << v.why;
    left.s.set_refused(3, true);
    ASSERT_TRUE(liar.s.round_closed());
    ASSERT_TRUE(left.s.round_closed());
    EXPECT_EQ(liar.s.commit().members, (std::vector<uint32_t>{0, 1, 2}));
    EXPECT_EQ(liar.s.commit().over_norm, (std::vector<uint32_t>{3}));
    ExpectSameBits(liar.model(), left.model(), chunked ? "chunked" : "inline");
    // The liar's second copy is a duplicate, not a second chance.
    EXPECT_NE(liar.send(3, Direction(3, 0.1)).refusal, protocol::Refusal::kNone);
  }
}

// A configured bound: an update at it is taken, one above it is not, inline
// or in chunks; the default takes any update whose squares stay finite.
TEST(UpdateNorm, TheConfiguredBoundIsInclusive) {
  Server s(1.0);
  EXPECT_DOUBLE_EQ(s.s.uplink().max_norm(), 1.0);
  EXPECT_TRUE(s.send(0, Direction(0, 0.999)).ok());
  EXPECT_EQ(s.send(1, Direction(1, 1.01)).refusal, protocol::Refusal::kOverNorm);
  EXPECT_EQ(s.send_chunked(2, Direction(2, 1.01)).refusal, protocol::Refusal::kOverNorm);
  EXPECT_TRUE(s.send_chunked(3, Direction(3, 0.5)).ok());
  EXPECT_EQ(s.s.commit().members, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(s.s.commit().over_norm, (std::vector<uint32_t>{1, 2}));
  Server d;
  EXPECT_DOUBLE_EQ(d.s.uplink().max_norm(), std::sqrt(std::numeric_limits<double>::max()) / (kAgents + 1));
  EXPECT_TRUE(d.send(0, Direction(0, 1e150)).ok());
  EXPECT_EQ(d.send(1, Direction(1, 1e154)).refusal, protocol::Refusal::kOverNorm);
}

}  // namespace update_norm_test
}  // namespace fedrt
