// A generated problem whose coordinator does not generate the agents' data
// ([problem] coordinator_generates = false, README.md "The coordinator
// generates no data"): the devices generate their own from the task, the
// coordinator holds none (its log and summary.json say so, and metrics.csv's
// error is nan), and the trained models it writes, model_<algorithm>.npy, are
// the simulator's byte for byte on the same experiment file.
#include <cmath>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace generated_blind {

constexpr int kAgents = 4, kRounds = 4, kRuns = 2, kDim = 300;

TEST_F(NetTest, CoordinatorThatGeneratesNoDataWritesTheSimulatorsModels) {
  const fs::path cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = " + std::to_string(kAgents) + "\ndim = " + std::to_string(kDim) +
      "\nsamples = 20\nl2 = 0.1\nconcept_shift = 0.5\ncoordinator_generates = false\n"
      "[algorithm]\nnames = [\"fedavg\", \"scaffold\"]\nstep = 0.02\nlocal_steps = 5\nbatch = 2\n"
      "[run]\nrounds = " + std::to_string(kRounds) + "\nruns = " + std::to_string(kRuns) + "\nseed = 3\n"
      "[network]\nquorum = 1.0\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");

  // The coordinator generated nothing and says so; the simulator says it does.
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("agents=4 problem=lsq d=300"), std::string::npos) << log;
  EXPECT_NE(log.find("data generated_by=devices (problem.coordinator_generates = false"), std::string::npos) << log;
  EXPECT_NE(ReadFile(dir_ / "sim.log").find("problem.coordinator_generates = false concerns fedrt-coordinator only"),
            std::string::npos);
  const std::string summary = ReadFile(dir_ / "out" / "summary.json");
  EXPECT_NE(summary.find("\"error_metric\": \"none (problem.coordinator_generates = false"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("\"coordinator_generates\": false"), std::string::npos);
  EXPECT_EQ(summary.find("x_star"), summary.find("x_star; the final iterates"));  // no x_star but in the metric's name
  EXPECT_NE(ReadFile(dir_ / "sim" / "summary.json").find("\"error_metric\": \"||x_t - x_star||^2\""), std::string::npos);

  // metrics.csv: error nan at the coordinator, every other column the simulator's.
  std::istringstream fleet(ReadFile(dir_ / "out" / "metrics.csv")), plain(ReadFile(dir_ / "sim" / "metrics.csv"));
  std::string a, b;
  int rows = 0;
  while (std::getline(fleet, a) && std::getline(plain, b)) {
    const std::vector<std::string> x = Cells(a), y = Cells(b);
    ASSERT_EQ(x.size(), 7u) << a;
    ASSERT_EQ(x.size(), y.size()) << b;
    for (size_t c = 0; c < x.size(); ++c)
      if (c != 3 || rows == 0) {
        EXPECT_EQ(x[c], y[c]) << "row " << rows << " column " << c;
      }
    if (rows > 0) {
      EXPECT_EQ(x[3], "nan") << a;
      EXPECT_TRUE(std::isfinite(std::stod(y[3]))) << b;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 1 + 2 * kRuns * (kRounds + 1));

  // The trained models: (runs, d) float64, the same bytes from both drivers.
  for (const char* name : {"fedavg", "scaffold"}) {
    const std::string file = std::string("model_") + name + ".npy";
    const std::string f = ReadFile(dir_ / "out" / file), s = ReadFile(dir_ / "sim" / file);
    ASSERT_FALSE(f.empty()) << file;
    EXPECT_EQ(f.size(), 128u + 8u * kRuns * kDim) << file;  // a 128-byte header for this shape
    EXPECT_NE(f.find("'shape': (2, 300)"), std::string::npos) << file;
    EXPECT_TRUE(f == s) << file << " differs between the fleet and the simulator";
    std::printf("[generated, coordinator without data] %s: %zu bytes, fleet == simulator: %s\n", file.c_str(), f.size(),
                f == s ? "yes" : "no");
  }
}

}  // namespace generated_blind
}  // namespace fedrt::net::testing
