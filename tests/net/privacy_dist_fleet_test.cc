// Distributed DP-FedAvg on the real fleet (fedrt-coordinator and fedrt-device
// processes over TLS on loopback; docs/privacy-distributed.md, "On the
// fleet"): the devices add discrete Gaussian noise under SecAgg+. Under
// privacy.test_seed every device draws from the counter stream the
// simulator's devices draw from, so metrics.csv (error, agents, bits and
// the epsilon column at sigma_eff of each round's n) equals fedrt-sim's line
// for line. With devices vanishing after the key exchange down to the
// quorum, the noise left on the sum still has variance sigma^2 clip^2.
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net_harness.h"

namespace fedrt::net::testing {
namespace privacy_dist_fleet {

std::vector<std::string> Lines(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The last run's model in model_<name>.npy: (runs, d) float64 after its header.
std::vector<double> LastModel(const fs::path& npy, size_t d) {
  const std::string f = ReadFile(npy);
  std::vector<double> x(d);
  if (f.size() < 8 * d) return {};
  std::memcpy(x.data(), f.data() + f.size() - 8 * d, 8 * d);
  return x;
}

const char* kSecure =
    "[compression]\nquantizer = \"rounding\"\nbits = 24\nsecure_aggregation = true\n";

TEST_F(NetTest, DistributedDpFleetEqualsSimulatorWithTheSameTestSeed) {
  constexpr int kAgents = 8;
  const auto cfg = WriteExperiment(
      std::string("[problem]\nkind = \"lsq\"\nagents = 8\ndim = 5\n"
                  "[algorithm]\nnames = [\"fedavg\", \"fedprox\"]\nstep = 0.05\nlocal_steps = 10\n"
                  "[participation]\nrate = 0.7\n[run]\nrounds = 4\nruns = 1\nseed = 3\n"
                  "[network]\ndeadline_ms = 30000\nquorum = 1.0\nstart_timeout_ms = 60000\n") +
      kSecure +
      "[privacy]\nmechanism = \"distributed\"\nclip = 0.05\nnoise_multiplier = 1.0\nquorum = 0.5\n"
      "device_variance = 4096\ntest_seed = 11\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");

  const auto fleet_csv = Lines(dir_ / "out" / "metrics.csv"), sim_csv = Lines(dir_ / "sim" / "metrics.csv");
  ASSERT_EQ(sim_csv.size(), 1u + 2 * 5);
  EXPECT_EQ(sim_csv[0], "algorithm,run,round,error,agents,bits_up,bits_down,epsilon");
  ASSERT_EQ(fleet_csv.size(), sim_csv.size()) << ReadFile(dir_ / "out" / "metrics.csv");
  for (size_t i = 0; i < sim_csv.size(); ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  std::printf("[distributed fleet == fedrt-sim] last row: %s\n", fleet_csv.back().c_str());
  const std::string fm = ReadFile(dir_ / "out" / "model_fedavg.npy");
  EXPECT_TRUE(!fm.empty() && fm == ReadFile(dir_ / "sim" / "model_fedavg.npy")) << "the released models differ";

  // The comparison can fail: another test_seed, other noise, other errors.
  std::string other = ReadFile(cfg);
  other.replace(other.find("test_seed = 11"), 14, "test_seed = 12");
  std::ofstream(dir_ / "other.toml") << other;
  const pid_t sim2 = Spawn({Bin("fedrt-sim"), "--config", (dir_ / "other.toml").string(), "--out",
                            (dir_ / "sim2").string(), "--no-plot"},
                           dir_ / "sim2.log");
  ASSERT_EQ(Wait(sim2, 120000), 0) << ReadFile(dir_ / "sim2.log");
  const auto sim2_csv = Lines(dir_ / "sim2" / "metrics.csv");
  ASSERT_EQ(sim2_csv.size(), sim_csv.size());
  EXPECT_NE(sim2_csv[2], sim_csv[2]) << "round 1's error does not depend on the devices' noise";

  const auto fleet = nlohmann::json::parse(ReadFile(dir_ / "out" / "summary.json"));
  const auto simj = nlohmann::json::parse(ReadFile(dir_ / "sim" / "summary.json"));
  for (const char* name : {"fedavg", "fedprox"}) {
    const auto& f = fleet["algorithms"][name];
    const auto& s = simj["algorithms"][name];
    for (const char* key : {"mechanism", "epsilon", "delta", "noise_multiplier", "effective_noise_multiplier",
                            "quorum", "device_variance", "clip", "private", "secagg_failed_rounds"})
      EXPECT_EQ(f[key], s[key]) << name << " " << key;
    EXPECT_EQ(f["mechanism"], "distributed");
    EXPECT_EQ(f["private"], false);  // test_seed
    EXPECT_LT(f["effective_noise_multiplier"].get<double>(), 1.0);
    EXPECT_EQ(f["secagg_failed_rounds"], 0);
  }
  EXPECT_EQ(Count(ReadFile(dir_ / "coordinator.log"), "privacy alg="), 2u * 4 * 2);
}

// A coordinator killed after round 2 and restarted rebuilds each run's
// ledger from the committed rounds' sampled counts (PrivacyRounds::resume)
// and the devices re-enter the open secure round with the noised integers
// they had: the outputs, epsilon column included, are still fedrt-sim's
// byte for byte, and the restarted coordinator logs the simulator's epsilon
// for the rounds it closes.
TEST_F(NetTest, DistributedDpFleetRestartedMidRunStillEqualsSimulator) {
  constexpr int kAgents = 6;
  const auto cfg = WriteExperiment(
      std::string("[problem]\nkind = \"lsq\"\nagents = 6\ndim = 5\n"
                  "[algorithm]\nnames = [\"fedavg\"]\nstep = 0.05\nlocal_steps = 10\n"
                  "[participation]\nrate = 0.7\n[run]\nrounds = 5\nruns = 1\nseed = 3\n"
                  "[network]\ndeadline_ms = 30000\nquorum = 1.0\nstart_timeout_ms = 60000\n") +
      kSecure +
      "[privacy]\nmechanism = \"distributed\"\nclip = 0.05\nnoise_multiplier = 1.0\nquorum = 0.5\n"
      "device_variance = 4096\ntest_seed = 11\n");
  Provision(dir_ / "keys", kAgents);
  const int port = FreePort();
  pid_t co = StartCoordinator(cfg, port, {});
  ASSERT_EQ(WaitPort(), port) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port, {"--delay-ms", "100"});
  const fs::path log = dir_ / "coordinator.log";
  ASSERT_TRUE(WaitForLog(log, "privacy alg=fedavg run=0 round=2 ", 60000)) << ReadFile(log);
  Kill(co);
  const size_t committed = Rounds().size();
  ASSERT_GE(committed, 2u);
  ASSERT_LT(committed, 5u) << "the run ended before the kill";
  co = StartCoordinator(cfg, port, {}, "coordinator.restart.log");
  ASSERT_EQ(Wait(co, 90000), 0) << ReadFile(dir_ / "coordinator.restart.log");
  const std::string relog = ReadFile(dir_ / "coordinator.restart.log");
  EXPECT_NE(relog.find("resume state="), std::string::npos);

  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
  const auto fleet_csv = Lines(dir_ / "out" / "metrics.csv"), sim_csv = Lines(dir_ / "sim" / "metrics.csv");
  ASSERT_EQ(sim_csv.size(), 1u + 6);
  ASSERT_EQ(fleet_csv.size(), sim_csv.size()) << ReadFile(dir_ / "out" / "metrics.csv");
  for (size_t i = 0; i < sim_csv.size(); ++i) EXPECT_EQ(fleet_csv[i], sim_csv[i]) << "metrics.csv line " << i + 1;
  // The rounds the restarted coordinator closed: the simulator's epsilon (%.6g), from the rebuilt ledger.
  for (size_t t = committed + 1; t <= 5; ++t) {
    const std::string& row = sim_csv[1 + t];
    const double eps = std::stod(row.substr(row.rfind(',') + 1));
    char want[96];
    std::snprintf(want, sizeof want, "privacy alg=fedavg run=0 round=%zu epsilon=%.6g ", t, eps);
    EXPECT_NE(relog.find(want), std::string::npos) << want << "\n" << relog;
  }
  std::printf("[distributed fleet, killed after %zu rounds and restarted] metrics.csv == fedrt-sim: %s\n", committed,
              fleet_csv == sim_csv ? "yes" : "no");
}

// Acceptance: with devices dropping down to the quorum the noise on the sum
// still meets sigma^2 clip^2. N = 10, q = 1, quorum 0.8 (m = 8): two devices
// withhold their masked input in round 1 (they vanished after the key
// exchange), so exactly m noises are in the unmasked sum. The released model
// is x_0 + (S + Z) / (q N), x_0 = 0, so q N x_1 / (sigma clip) has per
// coordinate variance 1 from Z plus ||S||^2 / (d sigma^2 clip^2) <=
// m^2 / (d sigma^2) = 0.4 % from the clipped updates. Over d = 4096
// coordinates the sample std's standard error is 1 / sqrt(2 d) = 1.1 %:
// [0.95, 1.05] is 4.5 standard errors with the bias inside. The same run
// with every device (n = 10, noise sqrt(10 / 8) = 1.118 larger) is outside.
TEST_F(NetTest, DistributedDpNoiseMeetsSigmaClipWithDevicesDroppedToTheQuorum) {
  constexpr int kAgents = 10, kDim = 4096;
  const double sigma = 2.0, clip = 0.5;
  auto run = [&](const std::string& tag, bool drop) -> double {
    const fs::path out = dir_ / tag;  // this run's outputs; the state and the devices' start afresh
    fs::remove_all(dir_ / "out");
    fs::remove(dir_ / "coordinator.db");
    fs::remove(dir_ / "coordinator.db.rounds");  // its watermark: a new run
    for (int i = 0; i < kAgents; ++i) fs::remove_all(dir_ / Id(i));
    const auto cfg = WriteExperiment(
        std::string("[problem]\nkind = \"lsq\"\nagents = 10\ndim = 4096\nsamples = 4\n"
                    "[algorithm]\nnames = [\"fedavg\"]\nstep = 0.01\nlocal_steps = 1\n"
                    "[participation]\nrate = 1.0\n[run]\nrounds = 1\nruns = 1\nseed = 3\n"
                    "[network]\ndeadline_ms = 4000\nquorum = 0.8\nstart_timeout_ms = 60000\n") +
        kSecure +
        "[privacy]\nmechanism = \"distributed\"\nclip = 0.5\nnoise_multiplier = 2.0\nquorum = 0.8\n"
        "test_seed = 5\n");
    if (!fs::exists(dir_ / "keys")) Provision(dir_ / "keys", kAgents);
    const std::string log = tag + ".log";
    const pid_t co = StartCoordinator(cfg, 0, {}, log);
    const int port = WaitPort();
    EXPECT_GT(port, 0) << ReadFile(dir_ / log);
    for (int i = 0; i < kAgents; ++i)
      StartDevice(i, port, drop && i >= 8 ? std::vector<std::string>{"--withhold-masked", "0"} : std::vector<std::string>{});
    EXPECT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / log);
    fs::rename(dir_ / "out", out);
    const std::vector<double> x = LastModel(out / "model_fedavg.npy", kDim);
    if (x.size() != static_cast<size_t>(kDim)) return NAN;
    double mean = 0, var = 0;
    for (double v : x) mean += v / kDim;
    for (double v : x) var += (v - mean) * (v - mean) / (kDim - 1);
    return std::sqrt(var) * kAgents / (sigma * clip);  // q N x_1 / (sigma clip)
  };
  const double dropped = run("dropped", true);
  const std::string log = ReadFile(dir_ / "dropped.log");
  EXPECT_NE(log.find("agents=8/10"), std::string::npos) << log;  // 8 of 10 sampled made the sum
  EXPECT_EQ(Count(log, "secagg_failed"), 0u) << log;
  EXPECT_GE(Count(ReadFile(dir_ / (Id(8) + ".log")), "withheld the masked input"), 1u);
  const double all = run("all", false);
  std::printf("[distributed fleet] noise std on the sum / (sigma clip): 8 of 10 (m = 8) %.5f, all 10 %.5f "
              "(sqrt(10/8) = %.5f)\n",
              dropped, all, std::sqrt(10.0 / 8.0));
  EXPECT_GT(dropped, 0.95);
  EXPECT_LT(dropped, 1.05);
  EXPECT_GT(all / std::sqrt(10.0 / 8.0), 0.95);
  EXPECT_LT(all / std::sqrt(10.0 / 8.0), 1.05);
  EXPECT_GT(all, 1.05) << "all ten devices' noise must exceed the bound the dropped run met";
}

}  // namespace privacy_dist_fleet
}  // namespace fedrt::net::testing
