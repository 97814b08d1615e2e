// Gateways in the simulator (sim/gateway_hub.h, docs/gateways.md): the agents
// behind G gateways, each gateway's partial server session aggregating its
// agents' updates into exact sums it hands up as pieces, give the bits of the
// flat simulator: every family, partial participation, dithering with
// compression memory and the compressed downlink, the rounding quantizer's
// integer sums, FedEM's initial exchange, Fed-RR chains and central DP-FedAvg
// with adaptive clipping, and secure rounds (SecAgg+ with dropouts,
// distributed DP), whose masked inputs each gateway sums. G = 3 splits 10 or
// 12 agents unevenly; G = 16 leaves gateways with nobody, or nobody sampled,
// in every round.

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
    rounds = 8
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
    names = ["fedlsa", "scafflsa", "scafflsa-prob"]
    local_steps = 50
    comm_prob = 0.1
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
    names = ["fedem", "fedem-naive", "vr-fedem"]
)";
const char* kDither = R"(
    [compression]
    quantizer = "dither"
    levels = 4
)";
const char* kMemory = R"(
    [compression]
    quantizer = "dither"
    levels = 4
    control_variates = true
    downlink = true
)";
const char* kRounding = R"(
    [compression]
    quantizer = "rounding"
    bits = 12
    clip = 4.0
    control_variates = true
)";

std::string Participation(double q) { return "[participation]\nrate = " + std::to_string(q) + "\n"; }

bool SameBits(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(double)) != 0)
      return false;
  return true;
}

void ExpectSameAsFlat(const std::string& text, uint32_t gateways) {
  const config::ExperimentConfig cfg = Load(text);
  SimOptions tree;
  tree.gateways = gateways;
  auto flat = RunExperiment(cfg);
  auto through = RunExperiment(cfg, tree);
  ASSERT_TRUE(flat.ok()) << flat.status().message();
  ASSERT_TRUE(through.ok()) << through.status().message();
  ASSERT_EQ(flat->algorithms.size(), through->algorithms.size());
  for (size_t a = 0; a < flat->algorithms.size(); ++a) {
    const report::AlgorithmResult& x = flat->algorithms[a];
    const report::AlgorithmResult& y = through->algorithms[a];
    SCOPED_TRACE(x.name + " behind " + std::to_string(gateways) + " gateways");
    EXPECT_TRUE(SameBits(x.error, y.error));
    EXPECT_TRUE(SameBits(x.train_loss, y.train_loss));
    EXPECT_TRUE(SameBits(x.local_loss, y.local_loss));
    EXPECT_EQ(x.agents, y.agents);
    EXPECT_EQ(x.bits_up, y.bits_up);
    EXPECT_EQ(x.bits_down, y.bits_down);
    EXPECT_EQ(x.agent_steps, y.agent_steps);
    ASSERT_EQ(x.final_theta.size(), y.final_theta.size());
    for (size_t r = 0; r < x.final_theta.size(); ++r)
      EXPECT_EQ(0, std::memcmp(x.final_theta[r].data(), y.final_theta[r].data(), x.final_theta[r].size() * sizeof(double)));
  }
}

TEST(SimGateways, LsaFamilyGivesTheFlatBits) {
  ExpectSameAsFlat(std::string(kGarnet) + Participation(0.5), 3);
  ExpectSameAsFlat(std::string(kGarnet) + Participation(0.3) + kMemory, 3);
  ExpectSameAsFlat(std::string(kGarnet) + Participation(0.5) + kRounding, 16);
}

TEST(SimGateways, OptimisationFamilyGivesTheFlatBits) {
  ExpectSameAsFlat(kLsq, 3);
  ExpectSameAsFlat(std::string(kLsq) + Participation(0.4) + kDither, 3);
  ExpectSameAsFlat(std::string(kLsq) + Participation(0.4) + kMemory, 16);
  ExpectSameAsFlat(std::string(kLsq) + Participation(0.6) + kRounding, 3);
}

TEST(SimGateways, EmFamilyGivesTheFlatBits) {
  ExpectSameAsFlat(std::string(kGmm) + Participation(0.5), 3);
  ExpectSameAsFlat(std::string(kGmm) + Participation(0.5) + kMemory, 3);
  ExpectSameAsFlat(std::string(kGmm) + kRounding, 16);
}

TEST(SimGateways, CentralDpFedAvgWithAdaptiveClippingGivesTheFlatBits) {
  std::string dp = kLsq;
  const size_t names = dp.find("names");
  dp.replace(names, dp.find('\n', names) - names, "names = [\"fedavg\"]");
  dp += Participation(0.5);
  ExpectSameAsFlat(dp + "[privacy]\nclip = 0.05\nnoise_multiplier = 1.0\ntest_seed = 11\n", 3);
  ExpectSameAsFlat(dp + "[privacy]\nclip = 0.05\nnoise_multiplier = 1.0\ntest_seed = 11\nadaptive_quantile = 0.5\n", 3);
}

// Secure rounds: the gateways relay the SecAgg+ messages and sum their
// agents' masked inputs modulo 2^32; the coordinator unmasks the same total
// (with dropouts that vanish before their masked input), and distributed DP's
// noised integers go the same way.
TEST(SimGateways, SecureAggregationGivesTheFlatBits) {
  const std::string secure = "[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\n"
                             "secure_aggregation = true\nsecagg_dropout = 0.2\n";
  ExpectSameAsFlat(std::string(kGarnet) + Participation(0.5) + secure, 3);
  std::string lsq = kLsq;
  const size_t names = lsq.find("names");
  lsq.replace(names, lsq.find('\n', names) - names, "names = [\"fedavg\", \"fedprox-rr\"]");
  ExpectSameAsFlat(lsq + Participation(0.6) + secure, 3);
  ExpectSameAsFlat(std::string(kGmm) + Participation(0.6) +
                       "[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\nsecure_aggregation = true\n",
                   4);
  std::string dp = kLsq;
  dp.replace(dp.find("names"), dp.find('\n', dp.find("names")) - dp.find("names"), "names = [\"fedavg\"]");
  ExpectSameAsFlat(dp + Participation(0.8) +
                       "[compression]\nquantizer = \"rounding\"\nbits = 24\nsecure_aggregation = true\n"
                       "[privacy]\nmechanism = \"distributed\"\nclip = 1.0\nnoise_multiplier = 0.5\ntest_seed = 3\n",
                   3);
}

}  // namespace
}  // namespace fedrt::sim
