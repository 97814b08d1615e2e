// [data] and [model] in experiment files (docs/data.md): shards named by a
// {id} pattern give the simulator the same problem as the same numbers in the
// older problem.data directory, and bad tables are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "fedrt/config/experiment.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/report/results.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::config {
namespace {

namespace fs = std::filesystem;

class DataConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt_datacfg_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "shards");
    fs::create_directories(dir_ / "old");
    // Three agents, d = 2, binary labels; shards put the label between the features.
    const char* rows[3][3] = {{"1,0.5,-1", "0,1.5,2", "1,-0.25,0.75"},
                              {"0,2,1", "1,-1,-1", ""},
                              {"1,0.1,0.2", "0,0.3,-0.4", "1,3,3"}};
    for (int c = 0; c < 3; ++c) {
      std::ofstream shard(dir_ / "shards" / ("device-" + std::to_string(c) + ".csv"));
      std::ofstream old(dir_ / "old" / ("agent" + std::to_string(c) + ".csv"));
      shard << "x1,label,x2\n";
      old << "y,x1,x2\n";
      for (const char* r : rows[c]) {
        if (*r == '\0') continue;
        std::string s(r);  // y,x1,x2
        const size_t a = s.find(','), b = s.find(',', a + 1);
        shard << s.substr(a + 1, b - a - 1) << ',' << s.substr(0, a) << ',' << s.substr(b + 1) << '\n';
        old << s << '\n';
      }
    }
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
    EXPECT_FALSE(c.ok());
    return c.ok() ? "" : c.status().message();
  }
  fs::path dir_;
};

TEST_F(DataConfigTest, ShardsGiveTheSameProblemAsTheDataDirectory) {
  auto shards = Load("[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = \"logistic\"\nl2 = 0.01\n");
  ASSERT_TRUE(shards.ok()) << shards.status().message();
  EXPECT_EQ(shards->garnet.agents, 3);  // counted from the files
  auto old = Load("[problem]\nkind = \"logistic\"\ndata = \"old\"\nl2 = 0.01\n");
  ASSERT_TRUE(old.ok()) << old.status().message();
  auto a = BuildInstance(*shards);
  auto b = BuildInstance(*old);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ((*a)->agents(), 3u);
  ASSERT_EQ((*a)->problem().dim, 2u);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ((*a)->fed()->x[c], (*b)->fed()->x[c]) << c;
    EXPECT_EQ((*a)->fed()->y[c], (*b)->fed()->y[c]) << c;
  }
  // Same numbers, same hash of the data the coordinator read.
  EXPECT_EQ((*a)->problem().data_fingerprint, (*b)->problem().data_fingerprint);
  EXPECT_TRUE((*a)->problem().own_data);
  EXPECT_FALSE((*b)->problem().own_data);
}

TEST_F(DataConfigTest, BadTablesAreRefusedByName) {
  const std::string f = (dir_ / "experiment.toml").string();
  EXPECT_EQ(Error("[data]\nformat = \"parquet\"\n"), f + ": data.format 'parquet' unknown (csv, records or generated)");
  EXPECT_EQ(Error("[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n"),
            f + ": data.format = \"csv\" needs [model] kind = \"least_squares\", \"logistic\", \"softmax\", \"td0\", \"gmm\" or \"user\" (got '')");
  EXPECT_EQ(Error("[data]\nformat = \"csv\"\ntrain = \"shards/device-0.csv\"\n[problem]\nagents = 3\n[model]\nkind = "
                  "\"logistic\"\n"),
            f + ": data.train '" + (dir_ / "shards/device-0.csv").string() +
                "' has no {id}: every agent would read the same file");
  EXPECT_EQ(Error("[data]\nformat = \"csv\"\ntrain = \"nothing/{id}.csv\"\n[model]\nkind = \"logistic\"\n"),
            f + ": data.train: no shard '" + (dir_ / "nothing/0.csv").string() +
                "' (to count the agents, the coordinator and the simulator read every shard; a coordinator without "
                "the devices' data takes [data] coordinator_reads_shards = false and [problem] agents = N)");
  const std::string shards = "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n";
  EXPECT_EQ(Error(shards + "[model]\nkind = \"softmax\"\nclasses = 1\n"),
            f + ": model.classes = 1: softmax regression needs the number of classes K, 2 to 1024 (labels are 0..K-1)");
  EXPECT_EQ(Error(shards + "[model]\nkind = \"softmax\"\nclasses = 3\nl2 = 0\n"),
            f + ": model.l2 = 0: softmax regression needs l2 > 0 (without it the weights are unbounded and x_star does "
                "not exist)");
  EXPECT_EQ(Error("[model]\nkind = \"softmax\"\nclasses = 3\n"),
            f + ": model.kind = \"softmax\" trains on shards: set [data] format = \"csv\" or \"records\"");
  EXPECT_EQ(Error(shards + "[model]\nkind = \"logistic\"\nclasses = 3\n"),
            f + ": model.classes is a setting of model.kind = \"softmax\"");
  EXPECT_EQ(Error(shards + "label = \"reward\"\n[model]\nkind = \"td0\"\nintercept = true\n"),
            f + ": model.intercept is a setting of least_squares, logistic and softmax models");
  EXPECT_EQ(Error("[model]\nkind = \"least_squares\"\nintercept = true\n"),
            f + ": model.intercept adds a constant feature to the examples of [data] shards: set data.format = "
                "\"csv\" or \"records\"");
  EXPECT_NE(Error("[data]\nfromat = \"csv\"\n").find("data.fromat"), std::string::npos);
}

// [model] kind = "user" (docs/user-models.md): the task names d and trains on
// the devices' shards; the coordinator's instance holds x_0 (model.init) and
// no data, its evaluation has no error metric, and the simulator refuses it.
TEST_F(DataConfigTest, AUserModelTaskCarriesItsDimensionAndInitialIterate) {
  const std::string data = "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n";
  auto cfg = Load(data + "[model]\nkind = \"user\"\ndim = 4\ninit = [0.5, -1, 0, 2]\n");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto task = MakeTask(*cfg);
  ASSERT_TRUE(task.ok()) << task.status().message();
  EXPECT_EQ(task->problem.kind, task::ProblemKind::kUser);
  EXPECT_EQ(task->problem.dim, 4u);  // the parameters, not the shards' 2 features
  EXPECT_EQ(task->problem.agents, 3u);
  EXPECT_TRUE(task->problem.own_data);
  EXPECT_EQ(task::FamilyOf(task->problem.kind), task::Family::kOpt);
  auto inst = BuildInstance(*cfg);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  EXPECT_EQ((*inst)->initial_iterate(), (std::vector<double>{0.5, -1, 0, 2}));
  EXPECT_EQ((*inst)->fed(), nullptr);
  auto eval = report::Evaluation::Make(*task, DataFilesOf(*cfg), **inst, nullptr);
  ASSERT_TRUE(eval.ok()) << eval.status().message();
  EXPECT_TRUE(std::isnan((*eval)->initial_error()));
  auto zeros = Load(data + "[model]\nkind = \"user\"\ndim = 3\n");
  ASSERT_TRUE(zeros.ok()) << zeros.status().message();
  EXPECT_EQ((*BuildInstance(*zeros))->initial_iterate(), std::vector<double>(3, 0.0));
  auto sim = sim::RunExperiment(*cfg, {});
  ASSERT_FALSE(sim.ok());
  EXPECT_NE(std::string(sim.status().message()).find("the simulator has no code for a user-defined model"),
            std::string::npos)
      << sim.status().message();
}

TEST_F(DataConfigTest, BadUserModelTablesAreRefusedByName) {
  const std::string f = (dir_ / "experiment.toml").string();
  const std::string data = "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n";
  EXPECT_EQ(Error(data + "[model]\nkind = \"user\"\n"),
            f + ": model.dim is missing: a user model needs its parameter count d");
  EXPECT_EQ(Error(data + "[model]\nkind = \"user\"\ndim = 0\n"), f + ": model.dim must be in [1, 65536], got 0");
  EXPECT_EQ(Error(data + "[model]\nkind = \"user\"\ndim = 3\ninit = [1, 2]\n"),
            f + ": model.init has 2 numbers, model.dim is 3");
  EXPECT_EQ(Error(data + "[model]\nkind = \"user\"\ndim = 2\ninit = [1, \"a\"]\n"),
            f + ":7: 'model.init' element 2 is not a finite number");
  EXPECT_EQ(Error(data + "[model]\nkind = \"logistic\"\ndim = 3\n"),
            f + ": model.dim and model.init are for [model] kind = \"user\" (init: also \"gmm\") only");
  EXPECT_EQ(Error("[model]\nkind = \"user\"\ndim = 3\n"),
            f + ": [model] kind = \"user\" trains on the devices' own data: set data.format and data.train");
  EXPECT_EQ(Error(data + "test = \"t.csv\"\n[model]\nkind = \"user\"\ndim = 3\n"),
            f + ": data.test: the coordinator cannot score a user model (it has no code for it)");
}

TEST_F(DataConfigTest, ABadShardIsNamedWhenTheProblemIsBuilt) {
  std::ofstream(dir_ / "shards" / "device-1.csv") << "x1,label,x2\n2,1,1\n-1,7,-1\n";
  auto cfg = Load("[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = \"logistic\"\n");
  ASSERT_TRUE(cfg.ok());
  auto inst = BuildInstance(*cfg);
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(std::string(inst.status().message()),
            (dir_ / "shards/device-1.csv").string() +
                ":3:2 (label): label 7 is not a class of binary logistic regression (0/1 or -1/+1)");
}

// The held-out file is read by the evaluation (relative to the experiment
// file), scored at every row, and a file that does not fit the model is
// refused naming it.
TEST_F(DataConfigTest, AHeldOutFileIsScoredAndAMisfitIsNamed) {
  std::ofstream(dir_ / "test.csv") << "x1,label,x2\n1,1,0\n-1,0,0\n1,0,0\n";
  const std::string body =
      "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\ntest = \"test.csv\"\n[model]\nkind = "
      "\"logistic\"\nl2 = 0.5\n";
  auto cfg = Load(body);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->data.test, (dir_ / "test.csv").string());
  auto task = MakeTask(*cfg);
  ASSERT_TRUE(task.ok());
  auto inst = BuildInstance(*cfg);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  task->problem = (*inst)->problem();  // the dimension counted from the shards
  auto eval = report::Evaluation::Make(*task, DataFilesOf(*cfg), **inst, nullptr);
  ASSERT_TRUE(eval.ok()) << eval.status().message();
  report::AlgorithmResult res;
  (*eval)->algorithm_finished(0, res);  // no rounds ran: every row but the initial x_0 = 0 is NaN
  ASSERT_EQ(res.test_loss.size(), 1u);
  ASSERT_EQ(res.test_loss[0].size(), 4u);
  EXPECT_DOUBLE_EQ(res.test_loss[0][0], std::log(2.0));  // sigma(0) = 1/2 on every example, ||x_0|| = 0
  EXPECT_DOUBLE_EQ(res.test_accuracy[0][0], 1.0 / 3.0);  // a^T 0 = 0 predicts +1: right only on the first
  EXPECT_TRUE(std::isnan(res.test_loss[0][1]));

  std::ofstream(dir_ / "test.csv") << "x1,label,x2,x3\n1,1,0,0\n";
  auto eval2 = report::Evaluation::Make(*task, DataFilesOf(*cfg), **inst, nullptr);
  ASSERT_FALSE(eval2.ok());
  EXPECT_EQ(std::string(eval2.status().message()),
            "data.test: '" + (dir_ / "test.csv").string() + "' gives a model of dimension 3, the training shards 2");
  fs::remove(dir_ / "test.csv");
  auto eval3 = report::Evaluation::Make(*task, DataFilesOf(*cfg), **inst, nullptr);
  ASSERT_FALSE(eval3.ok());
  EXPECT_NE(std::string(eval3.status().message()).find("data.test: "), std::string::npos);
}

}  // namespace
}  // namespace fedrt::config
