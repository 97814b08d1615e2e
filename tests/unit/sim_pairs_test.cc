// The simulator runs whole (algorithm, run) pairs at once when rounds are
// short (runtime/src/sim/pair_runner.h): every metric array and final model
// must be the bits of the sequential path (one thread, runs in order), and
// on_round keeps its contracts (serialised, each run's rounds in order).

#include <cstring>
#include <string>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/sim/simulator.h"

namespace fedrt {
namespace {

using config::ExperimentConfig;

// Small logistic FedAvg + Scaffold + Fed-RR, stochastic: rounds of microseconds.
ExperimentConfig SmallLogistic() {
  ExperimentConfig c;
  c.problem = task::ProblemKind::kLogistic;
  c.garnet.agents = 6;
  c.garnet.dim = 5;
  c.opt.samples = 40;
  c.opt.covariate_shift = 0.5;
  c.opt.concept_shift = 2.0;
  c.opt.batch = 10;
  c.problem_seed = 7;
  c.step = 0.01;
  c.local_steps = 5;
  c.rounds = 120;
  c.runs = 3;
  c.participation = 0.8;
  c.algorithms = {"fedavg", "scaffold", "fedavg-rr"};
  c.plot = false;
  return c;
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

void ExpectSameResults(const sim::SimResult& a, const sim::SimResult& b) {
  ASSERT_EQ(a.algorithms.size(), b.algorithms.size());
  for (size_t k = 0; k < a.algorithms.size(); ++k) {
    const auto& x = a.algorithms[k];
    const auto& y = b.algorithms[k];
    EXPECT_EQ(x.name, y.name);
    ASSERT_EQ(x.error.size(), y.error.size());
    for (size_t r = 0; r < x.error.size(); ++r) {
      EXPECT_TRUE(SameBits(x.error[r], y.error[r])) << x.name << " run " << r;
      EXPECT_EQ(x.agents[r], y.agents[r]) << x.name << " run " << r;
      EXPECT_EQ(x.bits_up[r], y.bits_up[r]);
      EXPECT_EQ(x.bits_down[r], y.bits_down[r]);
      ASSERT_EQ(x.final_theta[r].size(), y.final_theta[r].size());
      EXPECT_EQ(0, std::memcmp(x.final_theta[r].data(), y.final_theta[r].data(),
                               sizeof(double) * static_cast<size_t>(x.final_theta[r].size())))
          << x.name << " run " << r;
    }
    EXPECT_EQ(x.train_loss.size(), y.train_loss.size());
    for (size_t r = 0; r < x.train_loss.size() && r < y.train_loss.size(); ++r) {
      EXPECT_TRUE(SameBits(x.train_loss[r], y.train_loss[r]));
      EXPECT_TRUE(SameBits(x.local_loss[r], y.local_loss[r]));
    }
    EXPECT_EQ(x.agent_steps, y.agent_steps);
    EXPECT_EQ(x.extra.dump(), y.extra.dump()) << x.name;  // per-run Polyak-Ruppert distances, in run order
  }
}

TEST(SimPairs, ParallelRunsGiveTheSequentialBits) {
  ExperimentConfig c = SmallLogistic();
  c.threads = 1;
  auto seq = sim::RunExperiment(c);
  c.threads = 2;
  auto par = sim::RunExperiment(c);
  ASSERT_TRUE(seq.ok()) << seq.status().message();
  ASSERT_TRUE(par.ok()) << par.status().message();
  EXPECT_FALSE(seq->concurrent_runs);
  ASSERT_TRUE(par->concurrent_runs);  // the parallel path ran
  ExpectSameResults(*seq, *par);
  // The runs differ from each other, so an exchange of rows would show.
  EXPECT_FALSE(SameBits(seq->algorithms[0].error[0], seq->algorithms[0].error[1]));
}

TEST(SimPairs, CallbacksStaySerialAndInOrder) {
  ExperimentConfig c = SmallLogistic();
  c.threads = 1;
  auto ref = sim::RunExperiment(c);
  ASSERT_TRUE(ref.ok());
  c.threads = 2;
  std::map<std::pair<size_t, long>, long> last;  // (algorithm, run) -> its last round seen
  int inside = 0, overlap = 0;
  long calls = 0;
  sim::SimOptions opt;
  opt.on_round_any_thread = true;
  opt.on_round = [&](const sim::RoundEvent& e) -> Status {
    if (++inside > 1) ++overlap;
    long& prev = last[{e.algorithm_index, e.run}];
    EXPECT_EQ(prev + 1, e.round);
    prev = e.round;
    ++calls;
    --inside;
    // Ending run 1 of Scaffold early keeps its rows so far, as on one thread.
    if (e.algorithm_index == 1 && e.run == 1 && e.round == 50) return Status(StatusCode::kCancelled, std::string("enough"));
    return Status::Ok();
  };
  auto par = sim::RunExperiment(c, opt);
  ASSERT_TRUE(par.ok()) << par.status().message();
  EXPECT_TRUE(par->concurrent_runs);
  EXPECT_EQ(overlap, 0);
  EXPECT_EQ(calls, 3 * 3 * 120 - 70);
  EXPECT_EQ(par->algorithms[1].error[1].size(), 51u);
  opt.on_round_any_thread = false;  // on the calling thread: runs one after the other
  last.clear();
  calls = 0;
  auto seq = sim::RunExperiment(c, opt);
  ASSERT_TRUE(seq.ok());
  EXPECT_FALSE(seq->concurrent_runs);
  ExpectSameResults(*seq, *par);
}

TEST(SimPairs, AFailingRunStopsTheExperiment) {
  ExperimentConfig c = SmallLogistic();
  c.threads = 2;
  sim::SimOptions opt;
  opt.on_round_any_thread = true;
  opt.on_round = [](const sim::RoundEvent& e) -> Status {
    if (e.algorithm_index == 0 && e.run == 2 && e.round == 10) return Status::Internal("boom");
    return Status::Ok();
  };
  auto r = sim::RunExperiment(c, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()), "fedavg: boom");
}

}  // namespace
}  // namespace fedrt
