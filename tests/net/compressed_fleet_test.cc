// The compression codec on the wire (fedrt.proto Update
// encoding 1): devices send bytes(Q(theta_{t,H}^c - theta_t - V_c)) with the
// simulator's RNG keys, the coordinator decodes them into the exact sum of the
// members' messages and keeps only the memories' sum W = sum_c V_c (across a
// restart too), and rejects malformed codec payloads without dropping the
// device. Every round is compared with the in-process simulator.
#include <cmath>
#include <cstring>
#include <limits>
#include <regex>
#include <set>
#include <thread>

#include "fedrt/device/driver.h"
#include "fedrt/coordinator/network_config.h"
#include "fedrt/wire/frame.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

// As fleet_test.cc: devices and simulator encode the same bytes (same local
// iterates, same CounterRng keys), the coordinator decodes them exactly, and
// only the arrival-order summation differs (~1e-16 per round).

std::string Config(int agents, int H, int T, int seed, int deadline_ms, const std::string& compression) {
  return "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = " + std::to_string(agents) +
         "\n[algorithm]\nnames = [\"scafflsa\"]\nstep = 0.01\nlocal_steps = " + std::to_string(H) +
         "\n[participation]\nrate = 1.0\n[run]\nrounds = " + std::to_string(T) + "\nruns = 1\nseed = " +
         std::to_string(seed) + "\n[network]\ndeadline_ms = " + std::to_string(deadline_ms) +
         "\nquorum = 0.5\nstart_timeout_ms = 60000\n[compression]\n" + compression;
}

constexpr const char* kDither4Cv = "quantizer = \"dither\"\nlevels = 4\ncontrol_variates = true\n";

// Acceptance (equivalence, quantized): N=20, H=1000, T=20, SCAFFLSA with
// 4-level dithering and compression control variates.
TEST_F(NetTest, QuantizedFleetMatchesSimulatorEveryRound) {
  const auto cfg = WriteExperiment(Config(20, 1000, 20, 1, 30000, kDither4Cv));
  Provision(dir_ / "keys", 20);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < 20; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 20u);
  config::ExperimentConfig e;
  ASSERT_TRUE(config::LoadExperimentToml(cfg.string(), e).ok());
  e.threads = 1;
  sim::SimOptions so;
  so.keep_theta_history = true;
  auto simres = sim::RunExperiment(e, so);
  ASSERT_TRUE(simres.ok()) << simres.status().message();
  const auto& h = simres->algorithms[0].theta_history[0];
  const std::vector<Eigen::VectorXd> sim(h.begin() + 1, h.end());
  int identical = 0, compared = 0;
  const double rel = MaxRelDiff(rounds, sim, 0, &identical, &compared);
  std::printf("[equivalence, dither s=4 + control variates] rounds compared=%d bit-identical=%d max relative "
              "difference=%.3e\n",
              compared, identical, rel);
  EXPECT_EQ(compared, 20);
  EXPECT_LE(rel, kRelTol);
  // Exact bits: 20 fixed-width payloads of 4 + ceil(d (1 + 3) / 8) bytes per round, as the simulator counts.
  const int d = static_cast<int>(sim[0].size());
  const uint64_t per = (4 + (static_cast<uint64_t>(d) * 4 + 7) / 8) * 8;
  for (const auto& r : rounds) {
    EXPECT_EQ(r.agents, 20u);
    EXPECT_EQ(r.bits_up, 20 * per);
    EXPECT_EQ(r.bits_up, simres->algorithms[0].bits_up[0][r.round + 1]);
  }
  // Compression changed the iterates (the test would pass vacuously otherwise).
  config::ExperimentConfig raw = e;
  raw.compression = {};
  auto rawres = sim::RunExperiment(raw, so);
  ASSERT_TRUE(rawres.ok());
  EXPECT_GT((rawres->algorithms[0].theta_history[0].back() - sim.back()).norm(), 1e-6 * sim.back().norm());
}

// The coordinator's memory sum W is persisted with each round (in the
// session's state): a coordinator killed mid-run resumes, devices resubmit the
// same codec bytes, and the run still equals the simulator.
TEST_F(NetTest, QuantizedCoordinatorRestartKeepsTheMemorySum) {
  const int n = 6;
  const auto cfg = WriteExperiment(Config(n, 1000, 10, 3, 20000, kDither4Cv));
  Provision(dir_ / "keys", n);
  const int port = FreePort();
  pid_t co = StartCoordinator(cfg, port, {});
  ASSERT_EQ(WaitPort(), port) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < n; ++i) StartDevice(i, port, {"--delay-ms", std::to_string(100 + 60 * i)});
  const fs::path log = dir_ / "coordinator.log";
  ASSERT_TRUE(WaitForLog(log, "open alg=scafflsa run=0 round=5 ", 30000)) << ReadFile(log);
  ASSERT_TRUE(WaitForLog(dir_ / (Id(0) + ".log"), "update alg=0 run=0 round=4", 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  Kill(co);
  const auto before = Rounds();
  ASSERT_EQ(before.size(), 4u) << ReadFile(log);
  co = StartCoordinator(cfg, port, {}, "coordinator.restart.log");
  ASSERT_EQ(Wait(co, 90000), 0) << ReadFile(dir_ / "coordinator.restart.log");
  const auto after = Rounds();
  ASSERT_EQ(after.size(), 10u);
  for (size_t t = 0; t < before.size(); ++t) EXPECT_EQ(after[t].theta, before[t].theta) << "round " << t;
  for (const auto& r : after) EXPECT_EQ(r.agents, static_cast<uint32_t>(n));
  int resubmitted = 0;
  for (int i = 0; i < n; ++i) resubmitted += Count(ReadFile(dir_ / (Id(i) + ".log")), "resubmit alg=0 run=0 round=4");
  EXPECT_GT(resubmitted, 0);  // acknowledged codec updates were sent again (same bytes) after the restart
  const auto sim = SimThetas(cfg);
  int identical = 0, compared = 0;
  const double rel = MaxRelDiff(after, sim, 0, &identical, &compared);
  std::printf("[restart, dither s=4 + control variates] rounds compared=%d max relative difference=%.3e\n", compared,
              rel);
  EXPECT_LE(rel, kRelTol);
  EXPECT_EQ(compared, 10);
}

// Devices killed in the middle of a round (after computing, before or after
// sending their codec update) restart from their state files; at the end the
// devices' memories add up to the coordinator's W (the tail of the last
// round's state), whether or not their updates made it into the round.
TEST_F(NetTest, QuantizedKilledDevicesKeepTheirMemoriesConsistentWithTheSum) {
  const int n = 6;
  const auto cfg = WriteExperiment(Config(n, 1000, 8, 2, 2000, kDither4Cv));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  std::vector<pid_t> dev;
  const int delay_ms[n] = {150, 900, 1200, 0, 0, 0};
  for (int i = 0; i < n; ++i) dev.push_back(StartDevice(i, port, {"--delay-ms", std::to_string(delay_ms[i])}));
  const fs::path log = dir_ / "coordinator.log";
  ASSERT_TRUE(WaitForLog(log, "open alg=scafflsa run=0 round=4 ", 30000)) << ReadFile(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // device 0 has sent, devices 1 and 2 not yet
  for (int i = 0; i < 3; ++i) Kill(dev[i]);
  ASSERT_TRUE(WaitForLog(log, "round alg=scafflsa run=0 round=4 ", 10000)) << ReadFile(log);
  for (int i = 0; i < 3; ++i) {
    fs::rename(dir_ / (Id(i) + ".log"), dir_ / (Id(i) + ".first.log"));
    StartDevice(i, port, {"--delay-ms", "100"});
  }
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(log);
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 8u);
  EXPECT_LT(rounds[3].agents, static_cast<uint32_t>(n)) << "the round with the kills closed without some devices";
  EXPECT_EQ(rounds.back().agents, static_cast<uint32_t>(n));
  std::vector<double> sum(8, 0.0);
  for (int i = 0; i < n; ++i) {
    const std::vector<double> v = DeviceMemory(cfg, static_cast<uint32_t>(i));
    ASSERT_EQ(v.size(), 8u) << "device " << i;
    double norm = 0;
    for (size_t j = 0; j < v.size(); ++j) sum[j] += v[j], norm += v[j] * v[j];
    EXPECT_GT(norm, 0.0) << "device " << i;
  }
  // SCAFFLSA's state: theta (d), then W (d). W moves by alpha S_m, the devices
  // by alpha m_c each: equal up to rounding.
  const std::vector<double>& state = rounds.back().state;
  ASSERT_EQ(state.size(), 16u);
  const std::vector<double> w(state.end() - 8, state.end());
  double diff = 0, scale = 0;
  for (size_t j = 0; j < 8; ++j) diff = std::max(diff, std::abs(w[j] - sum[j])), scale = std::max(scale, std::abs(sum[j]));
  std::printf("[killed devices, dither s=4 + control variates] max |W - sum_c V_c| = %.3e (max |sum_c V_c| = %.3e)\n",
              diff, scale);
  EXPECT_LE(diff, 1e-12 * scale);
  EXPECT_GT(scale, 0.0);
}

// Acceptance (bad codec payloads over TLS): a device with a valid handshake
// sends, once per round before its genuine update, a truncated payload, an
// over-long one, a NaN norm, a level above s, a sign on a zero level and a raw
// float64 payload (wrong encoding). Each is rejected with ERROR_MALFORMED and
// a reason, the device stays connected, nothing of the round moves, and
// every round equals the simulator's.
TEST_F(NetTest, BadCodecPayloadIsRejectedAndRoundsEqualSimulator) {
  const int n = 4, T = 6;
  const auto cfg = WriteExperiment(Config(n, 1000, T, 5, 30000, kDither4Cv));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  for (int i = 1; i < n; ++i) StartDevice(i, port);
  DeviceOptions opt = InProcessDevice(0, port);
  std::set<uint32_t> done;
  std::vector<uint32_t> encodings;
  DeviceHooks hooks;
  hooks.before_send = [&](const wire::Envelope& m, const RawWriter& raw) {
    if (!m.has_update()) return true;
    const wire::Update& u = m.update();
    encodings.push_back(u.encoding());
    if (!done.insert(u.round()).second) return true;
    wire::Envelope e = m;
    std::string p = u.payload(0);
    switch (u.round()) {
      case 0: p.pop_back(); break;        // truncated
      case 1: p.push_back('\0'); break;   // over-long
      case 2: {                           // NaN norm
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(&p[0], &nan, 4);
        break;
      }
      case 3: p[4] = static_cast<char>(0x0E); break;  // coordinate 0: level 7 > s = 4
      case 4: p[4] = static_cast<char>(0x01); break;  // coordinate 0: sign bit on level 0
      case 5: {                                        // raw float64 instead of the codec
        p.assign(8 * sizeof(double), '\0');
        const double half = 0.5;
        for (int i = 0; i < 8; ++i) std::memcpy(&p[8 * i], &half, 8);
        e.mutable_update()->set_encoding(0);
        break;
      }
    }
    e.mutable_update()->set_payload(0, p);
    (void)raw(wire::EncodeFrame(e));
    return true;
  };
  opt.hooks = &hooks;
  Status dev_status = Status::Ok();
  std::thread dev([&] { dev_status = RunDevice(opt); });
  const int rc = Wait(co, 120000);
  dev.join();
  const std::string log = ReadFile(dir_ / "coordinator.log");
  ASSERT_EQ(rc, 0) << log;
  EXPECT_TRUE(dev_status.ok()) << dev_status.message();
  for (uint32_t enc : encodings) EXPECT_EQ(enc, 1u);  // the genuine updates use the codec
  for (const char* reason : {"reason=malformed: segment 0 (7 bytes) rejected: dither decode: payload truncated",
                             "reason=malformed: segment 0 (9 bytes) rejected: dither decode: payload longer",
                             "rejected: dither decode: norm is NaN or infinite",
                             "rejected: dither decode: level exceeds the number of levels",
                             "rejected: dither decode: sign bit set on a zero level",
                             "reason=malformed: payload encoding 0, this round takes 1"})
    EXPECT_NE(log.find(reason), std::string::npos) << reason << "\n" << log;
  // Stayed connected until the experiment finished.
  EXPECT_GT(log.find("disconnected device=" + Id(0)), log.find("finished rounds=")) << log;
  EXPECT_EQ(Count(log, "registered device=" + Id(0)), 1u) << log;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  for (const auto& r : rounds) EXPECT_EQ(r.agents, static_cast<uint32_t>(n));
  const auto sim = SimThetas(cfg);
  int identical = 0, compared = 0;
  EXPECT_LE(MaxRelDiff(rounds, sim, 0, &identical, &compared), kRelTol);
  EXPECT_EQ(compared, T);
}

// Compressed downlink (docs/architecture.md, "Downlink"): devices keep xhat
// and receive Q(x - xhat) when their last update proves they hold the
// previous version, xhat whole otherwise (partial participation gives both).
// The fleet's metrics.csv, bits_down included, equals the simulator's.
TEST_F(NetTest, CompressedDownlinkOnTheFleetEqualsTheSimulator) {
  constexpr int kN = 6, kT = 8, kD = 5;
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = " + std::to_string(kN) + "\ndim = " + std::to_string(kD) +
      "\nsamples = 40\nconcept_shift = 1.0\n[algorithm]\nnames = [\"fedavg\", \"scaffold\"]\nstep = 0.05\n"
      "local_steps = 10\n[participation]\nrate = 0.7\n[run]\nrounds = " + std::to_string(kT) +
      "\nseed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\nstart_timeout_ms = 60000\n[compression]\n"
      "quantizer = \"dither\"\nlevels = 4\ndownlink = true\n");
  Provision(dir_ / "keys", kN);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kN; ++i) StartDevice(i, port);
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
  const std::string fleet = ReadFile(dir_ / "out" / "metrics.csv"), simulated = ReadFile(dir_ / "sim" / "metrics.csv");
  EXPECT_EQ(fleet, simulated);
  // bits_down per round: each announced agent costs 64 x broadcast (whole) or
  // the delta's bytes; after round 0 some rounds must carry deltas.
  std::istringstream rows(fleet);
  std::string line;
  std::getline(rows, line);
  ASSERT_EQ(line.rfind("algorithm,run,round,error,agents,bits_up,bits_down", 0), 0u) << line;
  int rounds = 0, cheaper = 0;
  while (std::getline(rows, line)) {
    const std::vector<std::string> f = Cells(line);
    if (f[2] == "0") continue;  // the initial row
    const uint64_t agents = std::stoull(f[4]), down = std::stoull(f[6]);
    const uint64_t whole = 64ull * kD * (f[0] == "scaffold" ? 2 : 1);
    ++rounds;
    EXPECT_LE(down, agents * whole) << line;
    cheaper += down < agents * whole ? 1 : 0;
  }
  EXPECT_EQ(rounds, 2 * kT);
  EXPECT_GE(cheaper, kT);  // most rounds send deltas to someone
  std::printf("[compressed downlink] %d rounds, %d with deltas; fleet metrics.csv == simulator's: %s\n", rounds, cheaper,
              fleet == simulated ? "yes" : "no");
}

}  // namespace
}  // namespace fedrt::net::testing
