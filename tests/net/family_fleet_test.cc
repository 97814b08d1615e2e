// Every algorithm family on the real fleet (fedrt-coordinator and fedrt-device
// processes over TLS on loopback), plain, compressed (4-level dithering) and
// with SecAgg+ (16-bit shared-scale rounding), compared with fedrt-sim on
// the same experiment file: the global iterate of every round of every
// algorithm bit for bit, and the outputs (metrics.csv: error, agents, bits
// up and down per round) line for line. Partial participation is on, so
// sampling, the VR-FedEM agents that are informed but not sampled, and
// FedEM's initial exchange all take part.
#include <fstream>
#include <string>
#include <vector>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace family_fleet {

struct Case {
  std::string name;        // test name suffix
  std::string experiment;  // [problem] and [algorithm] (+ [gmm])
  std::vector<std::string> algorithms;
  std::string compression;  // the [compression] table, or empty
};

constexpr int kAgents = 6, kRounds = 5;  // the experiments below say agents = 6

const char* kOpt = "[problem]\nkind = \"lsq\"\nagents = 6\ndim = 5\n[algorithm]\nnames = [\"fedavg\", \"scaffold\", \"fedprox\", "
                   "\"fedavg-rr\"]\nstep = 0.05\nlocal_steps = 10\n";
const char* kEm = "[problem]\nkind = \"gmm\"\nagents = 6\n[algorithm]\nnames = [\"fedem\", \"fedem-naive\", \"vr-fedem\"]\n"
                  "[gmm]\nbatch = 20\n";
const char* kLsa = "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = 6\n[algorithm]\nnames = [\"fedlsa\", "
                   "\"scafflsa\", \"scafflsa-prob\"]\nstep = 0.01\nlocal_steps = 100\n";
const char* kDither = "[compression]\nquantizer = \"dither\"\nlevels = 4\n";
const char* kDitherDown = "[compression]\nquantizer = \"dither\"\nlevels = 4\ndownlink = true\n";
const char* kSecure = "[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\nsecure_aggregation = true\n";

std::vector<Case> Cases() {
  const std::vector<std::string> opt = {"fedavg", "scaffold", "fedprox", "fedavg-rr"};
  const std::vector<std::string> em = {"fedem", "fedem-naive", "vr-fedem"};
  const std::vector<std::string> lsa = {"fedlsa", "scafflsa", "scafflsa-prob"};
  return {{"sgd_plain", kOpt, opt, ""},      {"sgd_dither", kOpt, opt, kDither}, {"sgd_secagg", kOpt, opt, kSecure},
          {"em_plain", kEm, em, ""},         {"em_dither", kEm, em, kDither},    {"em_secagg", kEm, em, kSecure},
          {"em_downlink", kEm, em, kDitherDown},
          {"lsa_plain", kLsa, lsa, ""},      {"lsa_dither", kLsa, lsa, kDither}, {"lsa_secagg", kLsa, lsa, kSecure}};
}

// gtest prints the case by its name, not as raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class FamilyFleetTest : public NetTest, public ::testing::WithParamInterface<Case> {};

std::vector<std::string> Lines(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_P(FamilyFleetTest, FleetEqualsSimulatorEveryRound) {
  const Case& c = GetParam();
  const auto cfg = WriteExperiment(c.experiment + "[participation]\nrate = 0.7\n[run]\nrounds = " +
                                   std::to_string(kRounds) +
                                   "\nruns = 1\nseed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\n"
                                   "start_timeout_ms = 60000\n" + c.compression);

  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");

  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");

  const auto rounds = Rounds();
  for (uint32_t a = 0; a < c.algorithms.size(); ++a) {
    int identical = 0, compared = 0;
    const double rel = MaxRelDiff(rounds, SimThetas(cfg, a), a, &identical, &compared);
    std::printf("[%s %s] rounds compared=%d bit-identical=%d max relative difference=%.3e\n", c.name.c_str(),
                c.algorithms[a].c_str(), compared, identical, rel);
    EXPECT_EQ(compared, kRounds) << c.algorithms[a];
    EXPECT_EQ(identical, kRounds) << c.algorithms[a];
  }
  const auto fleet_csv = Lines(dir_ / "out" / "metrics.csv"), sim_csv = Lines(dir_ / "sim" / "metrics.csv");
  ASSERT_EQ(fleet_csv.size(), 1 + c.algorithms.size() * (kRounds + 1));
  ASSERT_EQ(fleet_csv.size(), sim_csv.size());
  for (size_t i = 0; i < sim_csv.size(); ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  // Partial participation took effect (the comparison is not of full rounds only).
  bool partial = false;
  for (const auto& r : rounds) partial = partial || (r.round != protocol::kInitRound && r.sampled < kAgents);
  EXPECT_TRUE(partial);
  if (c.compression.find("secure") != std::string::npos) {
    EXPECT_GT(Count(ReadFile(dir_ / "coordinator.log"), "phase=unmask"), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyFleetTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace family_fleet
}  // namespace fedrt::net::testing
