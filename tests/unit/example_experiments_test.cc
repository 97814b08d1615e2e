// Every experiment file in examples/ loads, validates and builds the task the
// coordinator would send (so it runs unchanged with ./fedrt sim and
// ./fedrt fleet), and together the examples cover every algorithm and Fed-RR.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fedrt/config/experiment.h"
#include "fedrt/config/task_builder.h"

namespace fedrt::config {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> ExampleExperiments() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(FEDRT_EXAMPLES_DIR))
    if (e.is_regular_file() && e.path().extension() == ".toml") files.push_back(e.path());
  return files;
}

TEST(ExampleExperiments, EveryFileLoadsValidatesAndBuildsItsTask) {
  const auto files = ExampleExperiments();
  ASSERT_GE(files.size(), 10u) << "examples/ not found or emptied: " << FEDRT_EXAMPLES_DIR;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    ExperimentConfig cfg;
    const Status loaded = LoadExperimentToml(f.string(), cfg);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    ApplyFamilyDefaults(cfg);
    const Status valid = Validate(cfg);
    ASSERT_TRUE(valid.ok()) << valid.message();
    const auto task = MakeTask(cfg);
    ASSERT_TRUE(task.ok()) << task.status().message();
    EXPECT_EQ(task->num_algorithms, cfg.algorithms.size() * (cfg.opt.rr ? 2u : 1u));
  }
}

TEST(ExampleExperiments, CoverEveryAlgorithmAndFedRr) {
  std::set<task::AlgorithmKind> kinds;
  bool rr = false;
  for (const auto& f : ExampleExperiments()) {
    ExperimentConfig cfg;
    if (!LoadExperimentToml(f.string(), cfg).ok()) continue;  // reported by the test above
    ApplyFamilyDefaults(cfg);
    const auto task = MakeTask(cfg);
    if (!task.ok()) continue;
    for (uint32_t a = 0; a < task->num_algorithms; ++a) {
      kinds.insert(task->algorithms[a].kind);
      rr = rr || task->algorithms[a].rr;
    }
  }
  for (int k = 0; k <= static_cast<int>(task::AlgorithmKind::kVrFedEm); ++k)
    EXPECT_TRUE(kinds.count(static_cast<task::AlgorithmKind>(k))) << "no example runs algorithm kind " << k;
  EXPECT_TRUE(rr) << "no example runs Federated Richardson-Romberg";
}

}  // namespace
}  // namespace fedrt::config
