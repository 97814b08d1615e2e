// The server's defence of central DP-FedAvg (docs/privacy.md, "DP-FedAvg on
// the fleet"): without SecAgg+ the server session sees each plain update,
// and one longer than privacy.clip (a device that did not clip) is dropped
// from the round as if it had not reported: the others' result is the same
// bits as a round in which that device left, sent whole or in chunks. An
// update at the clip norm up to a device's rounding is taken.

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/privacy/gaussian_noise.h"
#include "fedrt/protocol/server_session.h"
#include "../protocol/raw_update.h"

namespace fedrt {
namespace dp_defence_test {

constexpr int kDim = 5;
constexpr uint32_t kAgents = 4;
constexpr double kClip = 0.5;

task::Task PrivateTask() {
  task::Task t;
  t.problem.kind = task::ProblemKind::kLeastSquares;
  t.problem.agents = kAgents;
  t.problem.dim = kDim;
  t.num_algorithms = 1;
  t.algorithms[0] = task::AlgorithmChoice{task::AlgorithmKind::kFedAvg, false};
  t.participation = 1.0;
  t.privacy.enabled = true;
  t.privacy.clip = kClip;
  t.privacy.noise_multiplier = 1.0;
  return t;
}

// Device c's update: a fixed direction scaled to L2 norm `norm`.
std::vector<double> Update(uint32_t c, double norm) { return protocol::raw_update::Direction(c, norm, kDim); }

protocol::ServerOptions PrivateOptions() {
  auto noise = std::make_shared<privacy::GaussianNoise>(privacy::GaussianNoise::Seeded(7, 0, 0));
  protocol::ServerOptions so;
  so.task = PrivateTask();
  so.standard_normal = [noise](double* out, size_t n) { return noise->Fill(out, n); };
  return so;
}

class Server : public protocol::raw_update::OpenRound {
 public:
  Server() : OpenRound(PrivateOptions()) {}
};

// Devices 0..2 clip; device 3 sends 4 x clip. The round closes as soon as
// device 3 is dropped, with the same model, bit for bit, as a round in which
// device 3 was withdrawn (revoked) instead.
TEST(DpDefence, AnUnclippedUpdateIsDroppedAndTheOthersResultIsUnchanged) {
  for (bool chunked : {false, true}) {
    Server liar, left;
    for (uint32_t c = 0; c < 3; ++c) {
      ASSERT_TRUE(liar.send(c, Update(c, 0.8 * kClip)).ok());
      ASSERT_TRUE(left.send(c, Update(c, 0.8 * kClip)).ok());
    }
    const protocol::Verdict v = chunked ? liar.send_chunked(3, Update(3, 4 * kClip)) : liar.send(3, Update(3, 4 * kClip));
    EXPECT_EQ(v.refusal, protocol::Refusal::kUnclipped) << v.why;
    EXPECT_NE(v.why.find("privacy.clip 0.5"), std::string::npos) << v.why;
    left.s.set_refused(3, true);
    ASSERT_TRUE(liar.s.round_closed());
    ASSERT_TRUE(left.s.round_closed());
    EXPECT_EQ(liar.s.commit().members, (std::vector<uint32_t>{0, 1, 2}));
    EXPECT_EQ(liar.s.commit().unclipped, (std::vector<uint32_t>{3}));
    const auto a = liar.model(), b = left.model();
    for (int i = 0; i < kDim; ++i)
      EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(double)), 0) << (chunked ? "chunked " : "") << "coordinate " << i;
    // The liar's second copy is a duplicate, not a second chance.
    EXPECT_NE(liar.send(3, Update(3, 0.1 * kClip)).refusal, protocol::Refusal::kNone);
  }
}

// An update at the clip norm up to a float32 device's rounding is taken;
// one 1e-3 above it is not; the same update is taken when privacy is off.
TEST(DpDefence, TheClipNormUpToRoundingIsTaken) {
  Server s;
  EXPECT_TRUE(s.send(0, Update(0, kClip * (1 + 1e-7))).ok());
  EXPECT_TRUE(s.send(1, Update(1, kClip)).ok());
  EXPECT_EQ(s.send(2, Update(2, kClip * (1 + 1e-3))).refusal, protocol::Refusal::kUnclipped);
  // Squares that overflow are not a way around the check.
  std::vector<double> huge(kDim, 1e200);
  EXPECT_EQ(s.send(3, huge).refusal, protocol::Refusal::kUnclipped);
  EXPECT_EQ(s.s.commit().members, (std::vector<uint32_t>{0, 1}));
}

}  // namespace dp_defence_test
}  // namespace fedrt
