// The SCAFFLSA authors' Garnet instance (tests/data/garnet_low_N100.txt):
// the simulator's noise-free FedLSA and SCAFFLSA against the reference
// tables (host presets; the ARM boards run td_fixture_test.cc only).

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/sim/simulator.h"
#include "garnet_fixture.h"

using namespace fedrt;
using fedrt::test::GarnetFixture;
using fedrt::test::kFixture;

namespace {

// Noise-free runs against the tables of the fixture README, 0.5% relative.
struct NoiseFreeCase {
  long h;
  std::vector<long> rounds;
  std::vector<double> fedlsa, scafflsa;
};

// One table: FedLSA and SCAFFLSA noise-free at local steps h, their errors at
// the listed rounds against the reference's.
void ExpectNoiseFreeTable(const NoiseFreeCase& nc) {
  config::ExperimentConfig cfg;
  cfg.problem = task::ProblemKind::kBundle;
  cfg.problem_file = kFixture;
  cfg.noise_free = true;
  cfg.step = 0.01;
  cfg.local_steps = nc.h;
  cfg.rounds = nc.rounds.back();
  cfg.runs = 1;
  cfg.threads = 2;
  cfg.algorithms = {"fedlsa", "scafflsa"};
  auto r = sim::RunExperiment(cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->algorithms.size(), 2u);
  EXPECT_DOUBLE_EQ(r->algorithms[0].error[0][0], 8.0);
  for (size_t i = 0; i < nc.rounds.size(); ++i) {
    const long t = nc.rounds[i];
    EXPECT_NEAR(r->algorithms[0].error[0][t] / nc.fedlsa[i], 1.0, 5e-3) << "FedLSA H=" << nc.h << " t=" << t;
    EXPECT_NEAR(r->algorithms[1].error[0][t] / nc.scafflsa[i], 1.0, 5e-3) << "SCAFFLSA H=" << nc.h << " t=" << t;
  }
}

// H = 100: 10^7 local steps, every code path of the noise-free run (the
// sanitizer pass runs this one).
TEST_F(GarnetFixture, NoiseFreeErrorsMatchReferenceTablesAtH100) {
  ExpectNoiseFreeTable({100, {1, 5, 10, 25, 500},
                        {7.9006, 7.5155, 7.0607, 5.8570, 3.1756e-2},
                        {7.9006, 7.5155, 7.0607, 5.8570, 3.1756e-2}});
}

// H = 10000: the same paths for 10^8 local steps (4 s in release, 90 s under
// ASan + UBSan: labelled statistical, release only; tests/CMakeLists.txt).
TEST_F(GarnetFixture, NoiseFreeErrorsMatchReferenceTablesAtH10000) {
  ExpectNoiseFreeTable({10000, {1, 5, 10, 25, 50},
                        {2.3210, 3.1755e-2, 2.0091e-3, 2.0326e-5, 3.2420e-8},
                        {2.3210, 3.1755e-2, 2.0093e-3, 2.0342e-5, 3.3022e-8}});
}

}  // namespace
