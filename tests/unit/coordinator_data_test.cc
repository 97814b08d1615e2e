// A coordinator without the devices' shards ([data] coordinator_reads_shards
// = false, docs/data.md): the experiment file gives N (problem.agents) and the
// model's dimension (model.features, or the header of data.test); the
// coordinator's instance holds no data, its evaluation reports no error but
// scores the held-out file; the simulator still reads every shard and says so
// when one is missing; missing or misplaced keys are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "fedrt/config/experiment.h"
#include "fedrt/task/fingerprint.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/report/results.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::config {
namespace {

namespace fs = std::filesystem;

class CoordinatorDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt_coorddata_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "shards");
    for (int c = 0; c < 3; ++c)  // d = 2 features, binary labels
      std::ofstream(dir_ / "shards" / ("device-" + std::to_string(c) + ".csv"))
          << "x1,label,x2\n" << c << ",1,0.5\n-1,0," << c + 1 << "\n";
    std::ofstream(dir_ / "test.csv") << "x1,label,x2\n1,1,0\n-1,0,0\n1,0,0\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result<ExperimentConfig> Load(const std::string& body) {
    const fs::path p = dir_ / "experiment.toml";
    std::ofstream(p) << body << "[algorithm]\nnames = [\"fedavg\"]\n[run]\nrounds = 3\n";
    ExperimentConfig cfg;
    Status st = LoadExperimentToml(p.string(), cfg);
    if (!st.ok()) return st;
    ApplyFamilyDefaults(cfg);
    st = Validate(cfg);
    if (!st.ok()) return st;
    return cfg;
  }
  std::string Error(const std::string& body) {
    auto c = Load(body);
    EXPECT_FALSE(c.ok()) << body;
    return c.ok() ? "" : c.status().message();
  }
  fs::path dir_;
};

constexpr const char* kBlind = "[data]\nformat = \"csv\"\ntrain = \"elsewhere/device-{id}.csv\"\ncoordinator_reads_shards = false\n";

TEST_F(CoordinatorDataTest, WithoutTheShardsTheFileGivesAgentsAndDimension) {
  auto cfg = Load(std::string(kBlind) + "[problem]\nagents = 5\n[model]\nkind = \"softmax\"\nclasses = 3\nl2 = 0.1\nfeatures = 4\n");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto inst = BuildInstance(*cfg, /*at_coordinator=*/true);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  EXPECT_EQ((*inst)->agents(), 5u);
  EXPECT_EQ((*inst)->problem().dim, 15u);  // K (p + 1) = 3 x (4 + 1)
  EXPECT_EQ((*inst)->fed(), nullptr);
  EXPECT_EQ((*inst)->initial_iterate(), std::vector<double>(15, 0.0));
  auto task = MakeTask(*cfg);
  ASSERT_TRUE(task.ok());
  task->problem = (*inst)->problem();
  auto eval = report::Evaluation::Make(*task, DataFilesOf(*cfg, true), **inst, nullptr);
  ASSERT_TRUE(eval.ok()) << eval.status().message();
  EXPECT_TRUE(std::isnan((*eval)->initial_error()));
  report::AlgorithmResult res;
  (*eval)->algorithm_finished(0, res);
  EXPECT_TRUE(res.test_loss.empty());  // no data.test: no held-out columns
  // Without intercept: d = K p.
  auto no_int = Load(std::string(kBlind) +
                     "[problem]\nagents = 5\n[model]\nkind = \"softmax\"\nclasses = 3\nl2 = 0.1\nfeatures = 4\nintercept = false\n");
  ASSERT_TRUE(no_int.ok()) << no_int.status().message();
  EXPECT_EQ((*BuildInstance(*no_int, true))->problem().dim, 12u);
}

// The dimension from the held-out file's header; it is scored as with the
// shards, and the problem fingerprint a device checks is the same as with them.
TEST_F(CoordinatorDataTest, TheHeldOutFileGivesTheDimensionAndIsScored) {
  const std::string model = "[model]\nkind = \"logistic\"\nl2 = 0.5\n";
  auto cfg = Load("[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\ntest = \"test.csv\"\n"
                  "coordinator_reads_shards = false\n[problem]\nagents = 3\n" + model);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto blind = BuildInstance(*cfg, true);
  ASSERT_TRUE(blind.ok()) << blind.status().message();
  EXPECT_EQ((*blind)->problem().dim, 2u);
  auto full = BuildInstance(*cfg);  // the simulator's: reads the shards
  ASSERT_TRUE(full.ok()) << full.status().message();
  ASSERT_NE((*full)->fed(), nullptr);
  EXPECT_EQ(task::ProblemFingerprint((*blind)->problem()), task::ProblemFingerprint((*full)->problem()));
  auto task = MakeTask(*cfg);
  ASSERT_TRUE(task.ok());
  task->problem = (*blind)->problem();
  auto eval = report::Evaluation::Make(*task, DataFilesOf(*cfg, true), **blind, nullptr);
  ASSERT_TRUE(eval.ok()) << eval.status().message();
  report::AlgorithmResult res;
  (*eval)->algorithm_finished(0, res);
  ASSERT_EQ(res.test_loss.size(), 1u);
  EXPECT_DOUBLE_EQ(res.test_loss[0][0], std::log(2.0));
  EXPECT_DOUBLE_EQ(res.test_accuracy[0][0], 1.0 / 3.0);
  report::SimResult described;
  (*eval)->describe(described);
  EXPECT_EQ(described.problem.dim, 2);
  EXPECT_FALSE(described.problem.extra.contains("x_star"));
}

TEST_F(CoordinatorDataTest, TheSimulatorStillNeedsEveryShard) {
  auto cfg = Load(std::string(kBlind) + "[problem]\nagents = 3\n[model]\nkind = \"logistic\"\nfeatures = 2\n");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto sim = sim::RunExperiment(*cfg, {});
  ASSERT_FALSE(sim.ok());
  const std::string m = sim.status().message();
  EXPECT_NE(m.find("the simulator trains every agent's shard, so it needs them all (data.coordinator_reads_shards = "
                   "false spares only the coordinator): "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find((dir_ / "elsewhere/device-0.csv").string()), std::string::npos) << m;
  // With the shards present it reads them, and model.features must be theirs.
  auto wrong = Load("[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\ncoordinator_reads_shards = false\n"
                    "[problem]\nagents = 3\n[model]\nkind = \"logistic\"\nfeatures = 3\n");
  ASSERT_TRUE(wrong.ok()) << wrong.status().message();
  auto inst = BuildInstance(*wrong);
  ASSERT_FALSE(inst.ok());
  EXPECT_NE(std::string(inst.status().message()).find("model.features = 3, but the shards '"), std::string::npos)
      << inst.status().message();
}

TEST_F(CoordinatorDataTest, MissingOrMisplacedKeysAreRefusedByName) {
  const std::string f = (dir_ / "experiment.toml").string();
  const std::string blind = kBlind;
  EXPECT_EQ(Error(blind + "[model]\nkind = \"logistic\"\nfeatures = 2\n"),
            f + ": data.coordinator_reads_shards = false: the coordinator does not count the shards, set [problem] "
                "agents = N (the number of devices)");
  EXPECT_EQ(Error(blind + "[problem]\nagents = 3\n[model]\nkind = \"logistic\"\n"),
            f + ": data.coordinator_reads_shards = false: the coordinator needs the model's dimension, set [model] "
                "features = p (feature columns per example) or give a data.test file");
  EXPECT_EQ(Error(blind + "[problem]\nagents = 3\n[model]\nkind = \"logistic\"\nfeatures = 0\n"),
            f + ": model.features must be in [1, 65536], got 0");
  EXPECT_EQ(Error(blind + "[problem]\nagents = 3\n[model]\nkind = \"td0\"\nfeatures = 2\n"),
            f + ": data.coordinator_reads_shards = false is not available for td0: its initial iterate theta* + "
                "(1, ..., 1) needs every agent's transitions");
  EXPECT_EQ(Error(blind + "[problem]\nagents = 3\n[model]\nkind = \"user\"\ndim = 3\nfeatures = 2\n"),
            f + ": model.features: a user model's size is model.dim");
  EXPECT_EQ(Error("[data]\ncoordinator_reads_shards = false\n[problem]\nkind = \"logistic\"\nagents = 3\n"),
            f + ": data.coordinator_reads_shards = false needs the devices' own data (data.format = \"csv\" or "
                "\"records\"); a coordinator that does not generate a generated problem's data takes "
                "problem.coordinator_generates = false");
  EXPECT_EQ(Error("[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = \"logistic\"\nfeatures = 2\n"),
            f + ": model.features is for [data] coordinator_reads_shards = false (otherwise the dimension comes from "
                "the shards)");
  EXPECT_NE(Error(blind + "[problem]\nagents = 3\n[model]\nkind = \"logistic\"\nfeatures = \"two\"\n").find("features"),
            std::string::npos);
  // A user model needs no dimension from the shards: agents are enough.
  auto user = Load(blind + "[problem]\nagents = 4\n[model]\nkind = \"user\"\ndim = 3\n");
  ASSERT_TRUE(user.ok()) << user.status().message();
  EXPECT_EQ((*BuildInstance(*user, true))->agents(), 4u);
}

}  // namespace
}  // namespace fedrt::config
