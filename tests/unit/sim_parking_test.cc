// Parked agents (sim/session_driver.h): agents a round does not call on keep
// only their state between rounds (control variates, compression memory,
// xhat) and the called ones run on a pool of sessions. Every family, with
// partial participation, compression memory, a compressed downlink, secure
// aggregation with dropouts and Fed-RR chains, gives the bits of a run that
// keeps one session per agent; and the pool holds only as many sessions as
// the largest round called on.

#include <cstring>
#include <string>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "fedrt/config/experiment_toml.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim {
namespace {

config::ExperimentConfig Load(const std::string& text) {
  toml::table root = toml::parse(text + R"(
    [run]
    rounds = 10
    runs = 2
    threads = 2
    plot = false
  )");
  config::ExperimentConfig cfg;
  const Status st = config::LoadExperimentTable(root, "test", "", cfg);
  EXPECT_TRUE(st.ok()) << st.message();
  return cfg;
}

const char* kGarnet = R"(
    [problem]
    kind = "garnet"
    heterogeneity = "high"
    agents = 12
    states = 30
    actions = 2
    branching = 2
    dim = 8
    [algorithm]
    names = ["fedlsa", "scafflsa"]
    local_steps = 50
)";
const char* kLsq = R"(
    [problem]
    kind = "lsq"
    agents = 10
    dim = 4
    samples = 40
    concept_shift = 1.0
    [algorithm]
    names = ["fedavg", "scaffold", "fedprox", "scaffold-rr"]
    step = 0.02
    local_steps = 5
    batch = 4
)";
const char* kGmm = R"(
    [problem]
    kind = "gmm"
    agents = 10
    [gmm]
    components = 2
    data_dim = 2
    points = 60
    own_weight = 0.9
    separation = 4.0
    em_step = 0.5
    inner_iters = 3
    batch = 5
    [algorithm]
    names = ["fedem", "vr-fedem"]
)";
const char* kMemory = R"(
    [compression]
    quantizer = "dither"
    levels = 4
    control_variates = true
    downlink = true
)";
const char* kSecure = R"(
    [compression]
    quantizer = "rounding"
    bits = 16
    clip = 2.0
    secure_aggregation = true
    secagg_dropout = 0.2
)";

std::string Participation(double q) { return "[participation]\nrate = " + std::to_string(q) + "\n"; }

template <class T>
bool SameBits(const std::vector<std::vector<T>>& a, const std::vector<std::vector<T>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(T)) != 0) return false;
  return true;
}

void ExpectSameRuns(const std::string& text) {
  const config::ExperimentConfig cfg = Load(text);
  SimOptions resident;
  resident.park_idle_agents = false;
  auto kept = RunExperiment(cfg, resident);
  auto parked = RunExperiment(cfg);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  ASSERT_TRUE(parked.ok()) << parked.status().message();
  ASSERT_EQ(kept->algorithms.size(), parked->algorithms.size());
  for (size_t a = 0; a < kept->algorithms.size(); ++a) {
    const report::AlgorithmResult& x = kept->algorithms[a];
    const report::AlgorithmResult& y = parked->algorithms[a];
    SCOPED_TRACE(x.name);
    EXPECT_TRUE(SameBits(x.error, y.error));
    EXPECT_EQ(x.agents, y.agents);
    EXPECT_EQ(x.bits_up, y.bits_up);
    EXPECT_EQ(x.bits_down, y.bits_down);
    EXPECT_EQ(x.agent_steps, y.agent_steps);
    for (size_t r = 0; r < x.final_theta.size(); ++r)
      EXPECT_EQ(0, std::memcmp(x.final_theta[r].data(), y.final_theta[r].data(), x.final_theta[r].size() * sizeof(double)));
    EXPECT_EQ(x.client_sessions, static_cast<uint64_t>(kept->problem.agents));  // one per agent
    EXPECT_EQ(x.parked_bytes_per_agent, 0u);
    EXPECT_GT(y.parked_bytes_per_agent, 0u);
  }
}

TEST(SimParking, LsaFamilyGivesTheBitsOfResidentAgents) {
  ExpectSameRuns(std::string(kGarnet) + Participation(0.3));
  ExpectSameRuns(std::string(kGarnet) + Participation(0.5) + kMemory);
  ExpectSameRuns(std::string(kGarnet) + Participation(0.5) + kSecure);
}

TEST(SimParking, OptimisationFamilyGivesTheBitsOfResidentAgents) {
  ExpectSameRuns(std::string(kLsq) + Participation(0.4));
  ExpectSameRuns(std::string(kLsq) + Participation(0.4) + kMemory);
  // Scaffold refuses SecAgg+ dropouts (a dropped update would break mean_c c_c = c).
  std::string secure = kLsq;
  const size_t names = secure.find("names");
  secure.replace(names, secure.find('\n', names) - names, "names = [\"fedavg\", \"fedprox-rr\"]");
  ExpectSameRuns(secure + Participation(0.6) + kSecure);
}

TEST(SimParking, EmFamilyGivesTheBitsOfResidentAgents) {
  ExpectSameRuns(std::string(kGmm) + Participation(0.5));
  ExpectSameRuns(std::string(kGmm) + Participation(0.5) + kMemory);
}

// What an idle agent keeps: its session header and, per algorithm, exactly
// the vectors that carry over (SCAFFLSA's xi_c: d doubles; with compression
// memory V: d more; with a compressed downlink, xhat: d more).
TEST(SimParking, AnIdleAgentKeepsOnlyItsStateBetweenRounds) {
  auto plain = RunExperiment(Load(std::string(kGarnet) + Participation(0.25)));
  auto memory = RunExperiment(Load(std::string(kGarnet) + Participation(0.25) + kMemory));
  ASSERT_TRUE(plain.ok() && memory.ok());
  const uint64_t header = plain->algorithms[0].parked_bytes_per_agent;  // FedLSA: no vector carries over
  EXPECT_LT(header, 160u);
  EXPECT_EQ(plain->algorithms[1].parked_bytes_per_agent, header + 8 * 8);            // xi_c
  EXPECT_EQ(memory->algorithms[0].parked_bytes_per_agent, header + 2 * 8 * 8);       // V, xhat
  EXPECT_EQ(memory->algorithms[1].parked_bytes_per_agent, header + 3 * 8 * 8);       // xi_c, V, xhat
  // 12 agents at rate 0.25: the pool holds the largest round's sampled agents, not 12.
  for (const report::AlgorithmResult& a : plain->algorithms) {
    uint32_t most = 0;
    for (const auto& run : a.agents)
      for (uint32_t n : run) most = std::max(most, n);
    EXPECT_EQ(a.client_sessions, most) << a.name;
    EXPECT_LT(a.client_sessions, 12u) << a.name;
  }
}

}  // namespace
}  // namespace fedrt::sim
