// A coordinator of the LSA family frees its agents' systems once the
// evaluation is made (problems::Instance::drop_agents, docs/scale.md): the
// evaluation still describes the same problem (theta*, Delta_het, FedLSA's
// predicted bias) and measures the same errors as over the full instance.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fedrt/config/experiment.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/report/results.h"

namespace fedrt::config {
namespace {

namespace fs = std::filesystem;

TEST(CoordinatorDropAgents, TheEvaluationIsUnchangedAndTheAgentsAreGone) {
  const fs::path p = fs::temp_directory_path() / ("fedrt_drop_agents_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(p) << "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = 40\n"
                   << "[algorithm]\nnames = [\"fedlsa\"]\nlocal_steps = 10\n[run]\nrounds = 5\nseed = 3\n";
  ExperimentConfig cfg;
  ASSERT_TRUE(LoadExperimentToml(p.string(), cfg).ok());
  fs::remove(p);
  auto task = MakeTask(cfg);
  ASSERT_TRUE(task.ok());
  auto full = BuildInstance(cfg, /*at_coordinator=*/true);
  auto dropped = BuildInstance(cfg, /*at_coordinator=*/true);
  ASSERT_TRUE(full.ok() && dropped.ok());
  auto eval_full = report::Evaluation::Make(*task, DataFilesOf(cfg, true), **full, nullptr);
  auto eval_dropped = report::Evaluation::Make(*task, DataFilesOf(cfg, true), **dropped, nullptr);
  ASSERT_TRUE(eval_full.ok() && eval_dropped.ok());
  (*dropped)->drop_agents();

  EXPECT_TRUE((*dropped)->locals().empty());
  EXPECT_TRUE((*dropped)->td()->lsa.abar.empty());
  EXPECT_TRUE((*dropped)->td()->reward.empty());
  EXPECT_EQ((*full)->locals().size(), 40u);

  report::SimResult a, b;
  (*eval_full)->describe(a);
  (*eval_dropped)->describe(b);
  EXPECT_EQ(b.problem.agents, 40);
  EXPECT_EQ(a.problem.dim, b.problem.dim);
  EXPECT_EQ(a.problem.theta_star, b.problem.theta_star);
  EXPECT_GT(a.problem.delta_het, 0.0);
  EXPECT_EQ(a.problem.delta_het, b.problem.delta_het);
  EXPECT_EQ(a.problem.description, b.problem.description);
  EXPECT_EQ((*eval_full)->initial_error(), (*eval_dropped)->initial_error());
  EXPECT_GT((*eval_dropped)->initial_error(), 0.0);
  report::AlgorithmResult ra, rb;
  (*eval_full)->algorithm_finished(0, ra);
  (*eval_dropped)->algorithm_finished(0, rb);
  EXPECT_GT(ra.predicted_bias_sq, 0.0);
  EXPECT_EQ(ra.predicted_bias_sq, rb.predicted_bias_sq);
  EXPECT_EQ(ra.predicted_bias_sq_stationary, rb.predicted_bias_sq_stationary);
}

}  // namespace
}  // namespace fedrt::config
