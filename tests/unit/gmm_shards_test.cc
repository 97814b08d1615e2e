// Gaussian mixtures on the devices' own shards (docs/data.md, "Gaussian
// mixtures"): the [model] keys are checked by name, shards have no label
// column, the k-means++ seeding is a deterministic function of the seed and
// the points, and federated EM on two well-separated clusters finds them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fedrt/config/experiment.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/gmm_data.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::problems {
namespace {

namespace fs = std::filesystem;

class GmmShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt_gmm_shards_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "shards");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Agent c: n_c points, a fraction share[c] around (-4, 0), the rest around (4, 0), unit variance.
  void WriteShards(int agents, uint64_t seed = 3) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> z(0.0, 1.0);
    const double share[4] = {0.9, 0.2, 0.5, 0.7};
    for (int c = 0; c < agents; ++c) {
      std::ofstream f(dir_ / "shards" / ("device-" + std::to_string(c) + ".csv"));
      f << "x,label\n";  // a column named "label" is a feature like any other
      const int n = 80 + 20 * c;
      for (int i = 0; i < n; ++i) {
        const double cx = i < share[c % 4] * n ? -4.0 : 4.0;
        f << cx + z(gen) << ',' << z(gen) << '\n';
      }
    }
  }
  fs::path Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  Status Load(const std::string& toml, config::ExperimentConfig& cfg) {
    return config::LoadExperimentToml(Write("experiment.toml", toml).string(), cfg);
  }
  static std::string Own(const std::string& model, const std::string& data = "") {
    return "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n" + data + "[model]\nkind = \"gmm\"\n" +
           model + "[algorithm]\nnames = [\"fedem\", \"vr-fedem\"]\n[run]\nrounds = 30\nseed = 4\n";
  }
  fs::path dir_;
};

TEST_F(GmmShardsTest, ConfigAcceptsComponentsAndInitAndRefusesTheRestByName) {
  WriteShards(2);
  config::ExperimentConfig ok;
  ASSERT_TRUE(Load(Own("components = 2\ninit = [-1, 0, 1, 0]\n"), ok).ok());
  EXPECT_EQ(ok.problem, task::ProblemKind::kGmm);
  EXPECT_EQ(ok.garnet.agents, 2);
  EXPECT_TRUE(config::Validate(ok).ok());
  auto inst = config::BuildInstance(ok);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  EXPECT_EQ((*inst)->problem().dim, 6u);  // G (1 + p) with p = 2 from the shards
  EXPECT_EQ((*inst)->problem().gmm.data_dim, 2u);
  const std::vector<double> shat0 = {0.5, 0.5, -0.5, 0, 0.5, 0};
  EXPECT_EQ((*inst)->initial_iterate(), shat0);

  auto refused = [&](const std::string& toml, const std::string& why) {
    config::ExperimentConfig cfg;
    const Status st = Load(toml, cfg);
    EXPECT_FALSE(st.ok()) << toml;
    EXPECT_NE(std::string(st.message()).find(why), std::string::npos) << st.message();
  };
  refused(Own(""), "model.components is missing");
  refused(Own("components = 65\n"), "model.components must be in [1, 64], got 65");
  refused(Own("components = 2\ninit = [1, 2, 3]\n"), "model.init has 3 numbers, not a multiple of model.components = 2");
  refused(Own("components = 2\n", "label = \"y\"\n"), "data.label: a Gaussian mixture has no label");
  refused(Own("components = 2\n", "coordinator_reads_shards = false\n") , "set [problem] agents = N");
  refused("[problem]\nagents = 2\n" + Own("components = 2\nfeatures = 2\n", "coordinator_reads_shards = false\n"),
          "set [model] init");
  refused("[problem]\nagents = 2\n" + Own("components = 2\ninit = [0, 0, 1, 1]\n", "coordinator_reads_shards = false\n"),
          "set [model] features = p");
  refused(Own("components = 2\n") + "[gmm]\npoints = 100\n", "gmm.points generates a mixture");
  refused("[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = \"logistic\"\ncomponents = 2\n",
          "model.components is a setting of [model] kind = \"gmm\"");
  refused("[model]\nkind = \"gmm\"\ncomponents = 2\n", "model.components and model.init are for a Gaussian mixture on");

  // init of the wrong length for the shards' p (a multiple of G, but G p = 4): refused when the shards are read.
  config::ExperimentConfig bad;
  ASSERT_TRUE(Load(Own("components = 2\ninit = [1, 2, 3, 4, 5, 6]\n"), bad).ok());
  auto b = config::BuildInstance(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(std::string(b.status().message()).find("model.init has 6 numbers, but G p = 2 x 2 = 4"), std::string::npos)
      << b.status().message();
}

TEST_F(GmmShardsTest, ShardsWithoutLabelsCountTheirRowsAndKeepTheCellChecks) {
  const fs::path f = Write("a.csv", "u,v,w\n1,2,3\n# a comment\n4,5,6\n");
  auto s = data::ReadCsvShard(f.string(), "label", data::LabelKind::kNone);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->dim, 3u);
  EXPECT_EQ(s->count(), 2u);
  EXPECT_EQ(s->x, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(s->features, (std::vector<std::string>{"u", "v", "w"}));
  auto err = [&](const std::string& text) {
    auto r = data::ReadCsvShard(Write("b.csv", text).string(), "label", data::LabelKind::kNone);
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  const std::string b = (dir_ / "b.csv").string();
  EXPECT_EQ(err("u,v\n1,2\n3,warm\n"), b + ":3:2 (v): 'warm' is not a number");
  EXPECT_EQ(err("u,v\n1,NaN\n"), b + ":2:2 (v): 'NaN' is not a finite number (NaN and Inf are refused)");
  EXPECT_EQ(err("u,v\n1,2,3\n"), b + ":2: 3 columns, the header has 2");
  EXPECT_EQ(err("u,v\n"), b + ": no data rows after the header");
  // A record file's label slot is ignored (even a NaN there).
  data::Shard rec;
  rec.dim = 2;
  rec.x = {1, 2, 3, 4};
  rec.y = {std::nan(""), 7};
  ASSERT_TRUE(data::WriteRecordShard((dir_ / "r.rec").string(), rec).ok());
  auto r = data::ReadRecordShard((dir_ / "r.rec").string(), data::LabelKind::kNone);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->count(), 2u);
  EXPECT_EQ(r->x, rec.x);
  EXPECT_EQ(r->y, (std::vector<double>{0, 0}));
}

TEST_F(GmmShardsTest, KMeansPlusPlusSeedingIsDeterministicAndPicksDataPoints) {
  WriteShards(4);
  ShardFiles files;
  files.train = (dir_ / "shards" / "device-{id}.csv").string();
  files.agents = 4;
  auto d = LoadGmmShards(files, 3);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->counts, (std::vector<uint32_t>{80, 100, 120, 140}));
  EXPECT_EQ(d->m, 0u);
  const auto a = GmmKMeansPlusPlus(*d, 9), again = GmmKMeansPlusPlus(*d, 9), other = GmmKMeansPlusPlus(*d, 10);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a, again);
  EXPECT_NE(a, other);
  // Every mean is one of the pooled points, and they are distinct.
  for (int g = 0; g < 3; ++g) {
    bool found = false;
    for (uint32_t c = 0; c < d->n && !found; ++c)
      for (uint32_t i = 0; i < d->counts[c] && !found; ++i)
        found = d->points[c][2 * i] == a[2 * g] && d->points[c][2 * i + 1] == a[2 * g + 1];
    EXPECT_TRUE(found) << "mean " << g;
    for (int h = 0; h < g; ++h) EXPECT_FALSE(a[2 * g] == a[2 * h] && a[2 * g + 1] == a[2 * h + 1]);
  }
}

TEST_F(GmmShardsTest, FederatedEmOnTwoSeparatedClustersFindsTheirMeans) {
  WriteShards(4);
  config::ExperimentConfig cfg;
  // Full local passes: FedEM with gamma = 1 is then exact EM, and VR-FedEM's cycles too.
  ASSERT_TRUE(Load(Own("components = 2\n") + "[gmm]\ninner_iters = 5\n", cfg).ok());
  cfg.threads = 2;
  cfg.plot = false;
  auto res = sim::RunExperiment(cfg, sim::SimOptions{});
  ASSERT_TRUE(res.ok()) << res.status().message();
  // The pooled sample means of each cluster (what EM converges to, up to the
  // tiny overlap of clusters 8 standard deviations apart).
  std::mt19937_64 gen(3);
  std::normal_distribution<double> z(0.0, 1.0);
  double sum[2][2] = {{0, 0}, {0, 0}}, n[2] = {0, 0};
  const double share[4] = {0.9, 0.2, 0.5, 0.7};
  for (int c = 0; c < 4; ++c) {
    const int m = 80 + 20 * c;
    for (int i = 0; i < m; ++i) {
      const int k = i < share[c] * m ? 0 : 1;
      const double x = (k == 0 ? -4.0 : 4.0) + z(gen), y = z(gen);
      sum[k][0] += x / m, sum[k][1] += y / m, n[k] += 1.0 / m;  // agents weigh equally
    }
  }
  for (const auto& alg : res->algorithms) {
    SCOPED_TRACE(alg.name);
    const Eigen::VectorXd& th = alg.final_theta[0];  // (pi_1, pi_2, mu_1, mu_2)
    const int lo = th[2] < th[4] ? 0 : 1;            // the component on the left
    for (int k = 0; k < 2; ++k) {
      const int g = k == 0 ? lo : 1 - lo;
      // Clusters 8 standard deviations apart: the responsibilities are 0 or 1
      // up to exp(-8) for the farthest-straying of these ~440 points, so EM's
      // fixed point is the clusters' (agent-weighted) sample means within
      // 1e-3; and those are within 4 standard errors (4 / sqrt(150) ~ 0.33)
      // of the true means (-4, 0) and (4, 0). A swapped or merged component
      // is off by 4 or more.
      EXPECT_NEAR(th[2 + 2 * g], sum[k][0] / n[k], 1e-3);
      EXPECT_NEAR(th[3 + 2 * g], sum[k][1] / n[k], 1e-3);
      EXPECT_NEAR(th[g], n[k] / 4.0, 1e-3);
      EXPECT_NEAR(th[2 + 2 * g], k == 0 ? -4.0 : 4.0, 0.33);
      EXPECT_NEAR(th[3 + 2 * g], 0.0, 0.33);
    }
    EXPECT_LT(alg.error[0].back(), 1e-6);
    ASSERT_EQ(alg.train_loss.size(), 1u);
    EXPECT_TRUE(std::isfinite(alg.train_loss[0].back()));
    EXPECT_LT(alg.train_loss[0].back(), alg.train_loss[0][1]);  // NLL falls from theta_0
  }
}

TEST_F(GmmShardsTest, ACoordinatorWithoutTheShardsRunsOnInitAndFeatures) {
  config::ExperimentConfig cfg;  // no shard on disk at all
  ASSERT_TRUE(Load("[problem]\nagents = 3\n" + Own("components = 2\nfeatures = 2\ninit = [-1, 0, 1, 0]\n",
                                                   "coordinator_reads_shards = false\n"),
                   cfg).ok());
  ASSERT_TRUE(config::Validate(cfg).ok());
  auto inst = config::BuildInstance(cfg, /*at_coordinator=*/true);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  EXPECT_EQ((*inst)->agents(), 3u);
  EXPECT_EQ((*inst)->problem().dim, 6u);
  EXPECT_EQ((*inst)->initial_iterate(), (std::vector<double>{0.5, 0.5, -0.5, 0, 0.5, 0}));
  for (const auto& l : (*inst)->locals()) EXPECT_EQ(l.gmm, nullptr);
  auto task = config::MakeTask(cfg);
  ASSERT_TRUE(task.ok());
  task->problem = (*inst)->problem();
  auto eval = report::Evaluation::Make(*task, config::DataFilesOf(cfg, true), **inst, nullptr);
  ASSERT_TRUE(eval.ok()) << eval.status().message();
  EXPECT_TRUE(std::isnan((*eval)->initial_error()));
  // The simulator trains every shard: it names the missing one.
  auto sim = config::BuildInstance(cfg);
  ASSERT_FALSE(sim.ok());
  EXPECT_NE(std::string(sim.status().message()).find("the simulator trains every agent's shard"), std::string::npos);
}

}  // namespace
}  // namespace fedrt::problems
