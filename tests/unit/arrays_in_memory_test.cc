// What the Python module (runtime/python) builds on, tested in C++ so the
// sanitizer preset covers it: array bundles built in memory and written as
// text, linear systems in a bundle, experiments from a parsed TOML table,
// the list of experiment keys, and a run ended early by on_round.

#include <cmath>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "fedrt/config/experiment_toml.h"
#include "fedrt/problems/td_problem.h"
#include "fedrt/sim/simulator.h"

namespace fedrt {
namespace {

using problems::ArrayBundle;
using problems::NdArray;

NdArray Array(const char* name, std::vector<size_t> shape, std::vector<double> values) {
  NdArray a;
  a.name = name;
  a.shape = std::move(shape);
  a.values = std::move(values);
  return a;
}

// Two agents, d = 2: Abar_c = diag(1, 2) and diag(3, 1), bbar_c = (1, 1) and (1, 3).
ArrayBundle LinearSystem(double sigma) {
  ArrayBundle b("test arrays");
  EXPECT_TRUE(b.add(Array("abar", {2, 2, 2}, {1, 0, 0, 2, 3, 0, 0, 1})).ok());
  EXPECT_TRUE(b.add(Array("bbar", {2, 2}, {1, 1, 1, 3})).ok());
  EXPECT_TRUE(b.add(Array("sigma_a", {2}, {sigma, sigma})).ok());
  return b;
}

TEST(ArrayBundleInMemory, TextReadsBackToTheSameDoubles) {
  ArrayBundle b("mem");
  ASSERT_TRUE(b.add(Array("gamma", {}, {0.95})).ok());
  ASSERT_TRUE(b.add(Array("x", {2, 3}, {0.1, 1.0 / 3.0, -2e-300, 5, 6, 1e300})).ok());
  auto again = ArrayBundle::parse(b.text(), "text");
  ASSERT_TRUE(again.ok()) << again.status().message();
  for (const std::string& name : b.names()) {
    ASSERT_NE(again->find(name), nullptr) << name;
    EXPECT_EQ(again->find(name)->shape, b.find(name)->shape);
    EXPECT_EQ(again->find(name)->values, b.find(name)->values);  // bit for bit
  }
}

TEST(ArrayBundleInMemory, RefusesWhatAFileCouldNotHold) {
  ArrayBundle b("mem");
  ASSERT_TRUE(b.add(Array("a", {2}, {1, 2})).ok());
  Status twice = b.add(Array("a", {1}, {1}));
  EXPECT_NE(std::string(twice.message()).find("'a' is given twice"), std::string::npos);
  Status shape = b.add(Array("b", {2, 2}, {1, 2, 3}));
  EXPECT_NE(std::string(shape.message()).find("has 3 values for shape [2 x 2]"), std::string::npos);
  Status nan = b.add(Array("c", {2}, {1, std::nan("")}));
  EXPECT_NE(std::string(nan.message()).find("non-finite value at flat index 1"), std::string::npos);
  Status name = b.add(Array("1x", {1}, {1}));
  EXPECT_EQ(name.code(), StatusCode::kInvalidArgument);
}

TEST(LinearSystemBundle, SolvesTheAveragedSystem) {
  auto p = problems::TdProblem::from_bundle(LinearSystem(0.5));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->linear_system());
  EXPECT_EQ(p->agents(), 2);
  // (Abar_1 + Abar_2) theta = bbar_1 + bbar_2: diag(4, 3) theta = (2, 4).
  EXPECT_DOUBLE_EQ(p->lsa.theta_star[0], 0.5);
  EXPECT_DOUBLE_EQ(p->lsa.theta_star[1], 4.0 / 3.0);
  EXPECT_EQ(p->sigma_a, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(p->sigma_b, (std::vector<double>{0.0, 0.0}));
}

TEST(LinearSystemBundle, NamesWhatIsWrong) {
  ArrayBundle no_b("m");
  ASSERT_TRUE(no_b.add(Array("abar", {1, 2, 2}, {1, 0, 0, 1})).ok());
  EXPECT_NE(std::string(problems::TdProblem::from_bundle(no_b).status().message()).find("bbar"), std::string::npos);
  ArrayBundle square("m");
  ASSERT_TRUE(square.add(Array("abar", {1, 2, 3}, {1, 0, 0, 1, 0, 0})).ok());
  ASSERT_TRUE(square.add(Array("bbar", {1, 2}, {1, 1})).ok());
  EXPECT_NE(std::string(problems::TdProblem::from_bundle(square).status().message()).find("square"), std::string::npos);
  ArrayBundle negative = LinearSystem(-1.0);
  EXPECT_NE(std::string(problems::TdProblem::from_bundle(negative).status().message()).find("must not be negative"),
            std::string::npos);
  ArrayBundle extra = LinearSystem(0.0);
  ASSERT_TRUE(extra.add(Array("feat_map", {1, 1}, {1})).ok());
  EXPECT_NE(std::string(problems::TdProblem::from_bundle(extra).status().message()).find("not part of a linear system"),
            std::string::npos);
}

config::ExperimentConfig SmallLinearRun(double sigma) {
  config::ExperimentConfig cfg;
  cfg.problem = task::ProblemKind::kBundle;
  cfg.problem_file = "test arrays";
  cfg.problem_arrays = std::make_shared<const ArrayBundle>(LinearSystem(sigma));
  cfg.local_steps = 5;
  cfg.step = 0.1;
  cfg.rounds = 40;
  cfg.threads = 1;
  config::ApplyFamilyDefaults(cfg);
  return cfg;
}

TEST(LinearSystemBundle, NoiseFreeScaffLsaReachesThetaStarAndNoiseMovesTheIterates) {
  auto exact = sim::RunExperiment(SmallLinearRun(0.0));
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  ASSERT_EQ(exact->algorithms[1].name, "scafflsa");
  EXPECT_LT(exact->algorithms[1].error[0].back(), 1e-20);
  auto noisy = sim::RunExperiment(SmallLinearRun(0.5));
  ASSERT_TRUE(noisy.ok());
  EXPECT_NE(noisy->algorithms[1].final_theta[0], exact->algorithms[1].final_theta[0]);
  EXPECT_LT(noisy->algorithms[1].error[0].back(), 0.5);  // noise, but near theta*: step 0.1, sigma 0.5
}

TEST(RunEarlyEnd, CancelledEndsOnlyThatRun) {
  config::ExperimentConfig cfg = SmallLinearRun(0.0);
  cfg.runs = 2;
  sim::SimOptions opt;
  opt.on_round = [](const sim::RoundEvent& e) {
    EXPECT_EQ(e.dim, 2);
    EXPECT_NE(e.model, nullptr);
    return e.run == 0 && e.round == 3 ? Status(StatusCode::kCancelled, std::string("enough")) : Status::Ok();
  };
  auto r = sim::RunExperiment(cfg, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& a : r->algorithms) {
    EXPECT_EQ(a.error[0].size(), 4u);  // rounds 0..3
    EXPECT_EQ(a.agents[0].size(), 4u);
    EXPECT_EQ(a.error[1].size(), 41u);
  }
  opt.on_round = [](const sim::RoundEvent&) { return Status(StatusCode::kAborted, std::string("callback failed")); };
  auto failed = sim::RunExperiment(cfg, opt);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(std::string(failed.status().message()).find("callback failed"), std::string::npos);
}

TEST(ExperimentTable, ReadsATableAndNamesKeysWithoutLines) {
  toml::table root;
  root.insert("run", toml::table{{"rounds", 7}, {"seed", 3}});
  root.insert("algorithm", toml::table{{"step", 0.5}});
  config::ExperimentConfig cfg;
  ASSERT_TRUE(config::LoadExperimentTable(root, "dict", "", cfg).ok());
  EXPECT_EQ(cfg.rounds, 7);
  EXPECT_EQ(cfg.seed, 3u);
  EXPECT_EQ(cfg.step, 0.5);
  toml::table bad;
  bad.insert("run", toml::table{{"roundz", 7}});
  Status st = config::LoadExperimentTable(bad, "dict", "", cfg);
  EXPECT_STREQ(st.message(), "dict: unknown key 'run.roundz'; did you mean 'run.rounds'?");
  toml::table wrong;
  wrong.insert("run", toml::table{{"rounds", "seven"}});
  EXPECT_STREQ(config::LoadExperimentTable(wrong, "dict", "", cfg).message(), "dict: 'run.rounds' must be an integer");
  toml::table huge;
  huge.insert("problem", toml::table{{"agents", int64_t{1} << 40}});
  EXPECT_STREQ(config::LoadExperimentTable(huge, "dict", "", cfg).message(),
               "dict: 'problem.agents' = 1099511627776 is too large (at most 2147483647)");
  toml::table not_table;
  not_table.insert("run", 3);
  EXPECT_NE(std::string(config::LoadExperimentTable(not_table, "dict", "", cfg).message()).find("'run' must be a table"),
            std::string::npos);
}

TEST(ExperimentTable, KeysListEveryTable) {
  const auto keys = config::ExperimentKeys();
  for (const char* t : {"experiment", "problem", "algorithm", "participation", "run", "compression", "gmm", "data", "model"})
    EXPECT_TRUE(keys.count(t)) << t;
  const auto& run = keys.at("run");
  for (const char* k : {"rounds", "runs", "seed", "threads", "out", "plot"})
    EXPECT_NE(std::find(run.begin(), run.end(), k), run.end()) << k;
}

}  // namespace
}  // namespace fedrt
