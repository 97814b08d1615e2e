// secure_aggregation = true in the simulator: the same run with and without it
// gives bit-identical global iterates (both sum the b-bit integers and
// dequantize once); simulated dropouts; rounds that cannot be unmasked leave
// the model unchanged and the run goes on; unsupported settings are refused.
#include <cmath>
#include <gtest/gtest.h>

#include <string>

#include "fedrt/config/experiment.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim {
using namespace fedrt::config;
namespace {

ExperimentConfig Base() {
  ExperimentConfig c;
  c.problem = task::ProblemKind::kGarnet;
  c.garnet.agents = 6;
  c.garnet.heterogeneity = problems::Heterogeneity::kHigh;
  c.garnet.n_states = 10;
  c.garnet.dim = 4;
  c.algorithms = {"fedlsa", "scafflsa"};
  c.step = 0.05;
  c.local_steps = 20;
  c.rounds = 4;
  c.seed = 11;
  c.threads = 1;
  c.plot = false;
  c.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  c.compression.quantizer.bits = 12;
  c.compression.quantizer.clip = 2.0;
  return c;
}

void ExpectBitIdentical(const SimResult& a, const SimResult& b) {
  ASSERT_EQ(a.algorithms.size(), b.algorithms.size());
  for (size_t i = 0; i < a.algorithms.size(); ++i) {
    const auto &x = a.algorithms[i], &y = b.algorithms[i];
    ASSERT_EQ(x.final_theta.size(), y.final_theta.size());
    for (size_t r = 0; r < x.final_theta.size(); ++r)
      for (int j = 0; j < x.final_theta[r].size(); ++j)
        EXPECT_EQ(x.final_theta[r][j], y.final_theta[r][j]) << x.name << " coordinate " << j;  // exact, not near
    EXPECT_EQ(x.error, y.error) << x.name;
    EXPECT_EQ(x.agents, y.agents) << x.name;
  }
}

TEST(SimSecAgg, GlobalIteratesBitIdenticalWithAndWithoutSecureAggregation) {
  ExperimentConfig plain = Base();
  ExperimentConfig secure = Base();
  secure.secagg.enabled = true;
  auto a = RunExperiment(plain);
  auto b = RunExperiment(secure);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectBitIdentical(*a, *b);
  // The runs moved (the comparison is not between two untouched initial points).
  EXPECT_NE(a->algorithms[0].error[0][0], a->algorithms[0].error[0].back());
  // Secure aggregation costs bandwidth: every uplink bit is counted.
  EXPECT_GT(b->algorithms[0].bits_up[0][1], 10 * a->algorithms[0].bits_up[0][1]);
  EXPECT_EQ(b->algorithms[1].extra.value("secagg_failed_rounds", -1), 0);
}

TEST(SimSecAgg, CompressionControlVariatesWithFullParticipationStayBitIdentical) {
  ExperimentConfig plain = Base();
  plain.compression.control_variates = true;
  plain.compression.quantizer.bits = 6;  // coarse: the control variates matter
  ExperimentConfig secure = plain;
  secure.secagg.enabled = true;
  auto a = RunExperiment(plain);
  auto b = RunExperiment(secure);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectBitIdentical(*a, *b);
  // And they differ from the run without control variates.
  ExperimentConfig nocv = plain;
  nocv.compression.control_variates = false;
  auto n = RunExperiment(nocv);
  ASSERT_TRUE(n.ok());
  EXPECT_NE(n->algorithms[1].error[0].back(), a->algorithms[1].error[0].back());
}

TEST(SimSecAgg, FedEmFamilyBitIdenticalWithPartialParticipation) {
  ExperimentConfig plain = Base();
  plain.problem = task::ProblemKind::kGmm;
  plain.algorithms = {"fedem", "fedem-naive", "vr-fedem"};
  plain.garnet.agents = 8;
  plain.participation = 0.75;
  plain.rounds = 4;
  plain.gmm.points = 60;
  plain.gmm.batch = 10;
  plain.compression.quantizer.bits = 8;
  plain.compression.quantizer.clip = 4.0;
  ExperimentConfig secure = plain;
  secure.secagg.enabled = true;
  ASSERT_TRUE(Validate(secure).ok()) << Validate(secure).message();
  auto a = RunExperiment(plain);
  auto b = RunExperiment(secure);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectBitIdentical(*a, *b);
  EXPECT_NE(a->algorithms[0].error[0][0], a->algorithms[0].error[0].back());
  EXPECT_GT(b->algorithms[0].bits_up[0][1], 2 * a->algorithms[0].bits_up[0][1]);
}

TEST(SimSecAgg, FedAvgScaffoldFedProxAndFedRrBitIdentical) {
  ExperimentConfig plain = Base();
  plain.problem = task::ProblemKind::kLeastSquares;
  plain.algorithms = {"fedavg", "scaffold", "fedprox-rr"};
  plain.garnet.agents = 6;
  plain.garnet.dim = 3;
  plain.opt.samples = 40;
  plain.opt.covariate_shift = 1.0;
  plain.local_steps = 5;
  plain.step = 0.05;
  plain.rounds = 3;
  plain.participation = 0.9;
  plain.compression.quantizer.bits = 10;
  plain.compression.quantizer.clip = 4.0;
  ExperimentConfig secure = plain;
  secure.secagg.enabled = true;
  ASSERT_TRUE(Validate(secure).ok()) << Validate(secure).message();
  auto a = RunExperiment(plain);
  auto b = RunExperiment(secure);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectBitIdentical(*a, *b);
  EXPECT_NE(a->algorithms[1].error[0][0], a->algorithms[1].error[0].back());
  // FedAvg tolerates dropouts: rounds use the survivors.
  secure.algorithms = {"fedavg"};
  secure.secagg.dropout = 0.2;
  secure.participation = 1.0;
  auto dr = RunExperiment(secure);
  ASSERT_TRUE(dr.ok()) << dr.status().message();
  for (long t = 1; t <= secure.rounds; ++t) EXPECT_EQ(dr->algorithms[0].agents[0][t], 5u);  // 6 - floor(1.2)
}

TEST(SimSecAgg, PartialParticipationAndProbabilisticCommunicationStayBitIdentical) {
  ExperimentConfig plain = Base();
  plain.garnet.agents = 8;
  plain.participation = 0.8;
  plain.algorithms = {"scafflsa-prob"};
  ExperimentConfig secure = plain;
  secure.secagg.enabled = true;
  auto a = RunExperiment(plain);
  auto b = RunExperiment(secure);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectBitIdentical(*a, *b);
}

// Compression control variates with partial participation: the server keeps
// W = sum_c V_c and needs only the members' sum, so the secure run equals the
// plain one bit for bit; with simulated dropouts it runs too (the dropped
// devices keep their V_c).
TEST(SimSecAgg, CompressionControlVariatesWithPartialParticipationStayBitIdentical) {
  ExperimentConfig plain = Base();
  plain.garnet.agents = 8;
  plain.participation = 0.6;
  plain.compression.control_variates = true;
  plain.compression.quantizer.bits = 6;
  ExperimentConfig secure = plain;
  secure.secagg.enabled = true;
  auto a = RunExperiment(plain);
  auto b = RunExperiment(secure);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectBitIdentical(*a, *b);
  secure.secagg.dropout = 0.2;
  auto c = RunExperiment(secure);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(std::isfinite(c->algorithms[0].error[0].back()));
}

TEST(SimSecAgg, DropoutsUseTheSurvivorsAndUnrecoverableRoundsLeaveTheModelUnchanged) {
  ExperimentConfig c = Base();
  c.garnet.agents = 10;
  c.algorithms = {"scafflsa"};
  c.rounds = 3;
  c.secagg.enabled = true;
  c.secagg.dropout = 0.2;  // 2 of 10 vanish after sharing keys, every round
  auto r = RunExperiment(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& alg = r->algorithms[0];
  for (long t = 1; t <= c.rounds; ++t) EXPECT_EQ(alg.agents[0][t], 8u);
  EXPECT_EQ(alg.extra.value("secagg_failed_rounds", -1), 0);
  EXPECT_NE(alg.error[0][0], alg.error[0][3]);

  c.secagg.dropout = 0.5;  // 5 > n - t = 4: no round can be unmasked
  auto f = RunExperiment(c);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const auto& fa = f->algorithms[0];
  EXPECT_EQ(fa.extra.value("secagg_failed_rounds", -1), 3);
  const std::string why = fa.extra.value("secagg_first_failure", std::string());
  EXPECT_NE(why.find("masked inputs arrived, fewer than t = 6"), std::string::npos) << why;
  for (long t = 1; t <= c.rounds; ++t) {
    EXPECT_EQ(fa.agents[0][t], 0u);
    EXPECT_EQ(fa.error[0][t], fa.error[0][0]);  // the model stays where it was
  }
}

TEST(SimSecAgg, RefusesWhatItCannotRun) {
  auto expect_refused = [](ExperimentConfig c, const std::string& words) {
    const Status st = Validate(c);
    ASSERT_FALSE(st.ok()) << words;
    EXPECT_NE(std::string(st.message()).find(words), std::string::npos) << st.message();
  };
  ExperimentConfig c = Base();
  c.secagg.enabled = true;
  ASSERT_TRUE(Validate(c).ok()) << Validate(c).message();
  ExperimentConfig d = c;
  d.compression.quantizer.kind = compression::QuantizerKind::kDither;
  expect_refused(d, "needs the shared-scale stochastic rounding quantizer");
  d = c;
  d.compression.quantizer.kind = compression::QuantizerKind::kNone;
  expect_refused(d, "needs the shared-scale stochastic rounding quantizer");
  d = c;
  d.compression.control_variates = true;
  ASSERT_TRUE(Validate(d).ok()) << Validate(d).message();  // the server tracks W = sum_c V_c
  d.participation = 0.5;
  d.secagg.dropout = 0.2;
  ASSERT_TRUE(Validate(d).ok()) << Validate(d).message();  // with any participation and dropouts
  d = c;
  d.problem = task::ProblemKind::kLeastSquares;
  d.algorithms = {"fedavg", "scaffold"};
  ASSERT_TRUE(Validate(d).ok()) << Validate(d).message();
  d.secagg.dropout = 0.2;
  expect_refused(d, "cannot run 'scaffold'");
  d = c;
  d.problem = task::ProblemKind::kGmm;
  d.algorithms = {"fedem"};
  d.participation = 0.5;
  ASSERT_TRUE(Validate(d).ok()) << Validate(d).message();
  d.secagg.dropout = 0.2;
  expect_refused(d, "problem gmm needs secagg_dropout = 0");
  d = c;
  d.compression.quantizer.bits = 24;
  d.garnet.agents = 1000;  // 24 + log2(1000) > 32
  expect_refused(d, "can wrap Z_(2^32)");
  d = c;
  d.compression.quantizer.bits = 16;
  d.garnet.agents = 40000;  // 16 + log2(40000) = 31.3: the sums could reach 2^31 (docs/security.md)
  expect_refused(d, "no bit of headroom below it (bits + log2 agents = 31.29 > 31");
  d.garnet.agents = 32768;  // 32768 (2^16 - 1) < 2^31: one bit left
  EXPECT_TRUE(Validate(d).ok()) << Validate(d).message();
  d = c;
  d.secagg.neighbours = 3;
  expect_refused(d, "secagg_neighbours");
  d = c;
  d.secagg.enabled = false;
  d.secagg.dropout = 0.1;
  expect_refused(d, "need compression.secure_aggregation = true");
}

}  // namespace
}  // namespace fedrt::sim
