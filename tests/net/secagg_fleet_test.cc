// Secure aggregation over the network: the coordinator runs the
// SecAgg+ server state machine per round with real fedrt-device processes
// (SecAggDevice, CTR-DRBG secrets) over TLS on loopback. Checked: iterates
// bit-identical to the simulator without secure aggregation (same shared-scale
// rounding and seeds); devices vanishing after their masked input still have
// their exact input in the sum; more than n - t such dropouts fail the round
// safely and the next round completes; what the coordinator received (its
// --secagg-dump record, a hook of the tests' coordinator) shows no device's
// input.
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <thread>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/device/driver.h"
#include "fedrt/coordinator/state_store.h"
#include "fedrt/wire/frame.h"
#include "fedrt.pb.h"
#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace secagg_fleet {

constexpr int kAgents = 10;  // DefaultGraph(10): complete graph, k = 9, t = 6
constexpr int kBits = 16;

std::string Config(const std::string& algs, int T) {
  return "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = " + std::to_string(kAgents) +
         "\n[algorithm]\nnames = [" + algs + "]\nstep = 0.01\nlocal_steps = 50\n[participation]\nrate = 1.0\n"
         "[run]\nrounds = " + std::to_string(T) + "\nruns = 1\nseed = 3\n[network]\ndeadline_ms = 10000\n"
         "quorum = 1.0\nstart_timeout_ms = 60000\n[compression]\nquantizer = \"rounding\"\nbits = " +
         std::to_string(kBits) + "\nclip = 2.0\nsecure_aggregation = true\n";
}

class SecAggFleetTest : public NetTest {
 protected:
  // Runs the fleet to completion; extra_for(i) are device i's extra flags.
  void RunFleet(const fs::path& cfg, const std::vector<std::string>& coordinator_extra,
                const std::map<int, std::vector<std::string>>& device_extra = {}) {
    Provision(dir_ / "keys", kAgents);
    const pid_t co = StartCoordinator(cfg, 0, coordinator_extra);
    const int port = WaitPort();
    ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
    for (int i = 0; i < kAgents; ++i) {
      auto it = device_extra.find(i);
      StartDevice(i, port, it == device_extra.end() ? std::vector<std::string>{} : it->second);
    }
    ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  }

  // theta_{t+1} of the simulator with secure aggregation off (same quantizer and seeds).
  std::vector<Eigen::VectorXd> PlainSim(const fs::path& cfg, size_t alg) {
    config::ExperimentConfig e;
    EXPECT_TRUE(config::LoadExperimentToml(cfg.string(), e).ok());
    e.secagg = {};
    e.threads = 1;
    sim::SimOptions so;
    so.keep_theta_history = true;
    auto res = sim::RunExperiment(e, so);
    EXPECT_TRUE(res.ok()) << res.status().message();
    if (!res.ok()) return {};
    const auto& h = res->algorithms[alg].theta_history[0];
    return std::vector<Eigen::VectorXd>(h.begin() + 1, h.end());
  }
};

// Acceptance line 1 in a loopback fleet, and (d) the coordinator's record.
TEST_F(SecAggFleetTest, SecureFleetIsBitIdenticalToPlainRoundingAndCoordinatorSeesOnlyMaskedData) {
  const int T = 4;
  const auto cfg = WriteExperiment(Config("\"fedlsa\", \"scafflsa\"", T));
  const fs::path dump = dir_ / "secagg_dump.txt";
  RunFleet(cfg, {"--secagg-dump", dump.string()});
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 2u * T);
  for (uint32_t alg = 0; alg < 2; ++alg) {
    const auto sim = PlainSim(cfg, alg);
    int identical = 0, compared = 0;
    const double rel = MaxRelDiff(rounds, sim, alg, &identical, &compared);
    std::printf("[secagg fleet vs plain-rounding simulator, alg %u] rounds compared=%d bit-identical=%d max rel diff=%.3e\n",
                alg, compared, identical, rel);
    EXPECT_EQ(compared, T);
    EXPECT_EQ(identical, T);
  }
  for (const auto& r : rounds) EXPECT_EQ(r.agents, static_cast<uint32_t>(kAgents));
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "phase=unmask answered=10/10"), 2u * T) << log;

  // (d) Everything the coordinator received in the secure rounds.
  std::ifstream in(dump);
  std::string line;
  std::map<int, int> kinds;
  std::vector<uint32_t> masked;
  int share_b = 0, share_s = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    uint32_t a, run, round, u;
    int body;
    std::string hex;
    ASSERT_TRUE(static_cast<bool>(ls >> a >> run >> round >> u >> body >> hex)) << line;
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    wire::Envelope env;
    ASSERT_TRUE(env.ParseFromString(bytes));
    ++kinds[static_cast<int>(env.body_case())];
    if (env.has_secagg_masked())
      masked.insert(masked.end(), env.secagg_masked().masked().begin(), env.secagg_masked().masked().end());
    if (env.has_secagg_unmask())
      for (const auto& s : env.secagg_unmask().shares()) (s.kind() == 1 ? share_b : share_s)++;
  }
  // Per round and algorithm: one advertisement, one share set, one masked input, one set of
  // consistency tags, one unmask answer per device.
  const int per = 2 * T * kAgents;
  EXPECT_EQ(kinds[wire::Envelope::kSecaggAdvertise], per);
  EXPECT_EQ(kinds[wire::Envelope::kSecaggShares], per);
  EXPECT_EQ(kinds[wire::Envelope::kSecaggMasked], per);
  EXPECT_EQ(kinds[wire::Envelope::kSecaggCheck], per);
  EXPECT_EQ(kinds[wire::Envelope::kSecaggUnmask], per);
  EXPECT_EQ(kinds.size(), 5u) << "the coordinator received something other than SecAgg+ messages";
  // Inputs are 16-bit integers: every one lies in [0, 2^16). Masked words do
  // with probability 2^-16 each (expected 0.02 of these 1280 words); the
  // plain inputs would put all of them there.
  ASSERT_EQ(masked.size(), static_cast<size_t>(per) * 8);
  size_t in_range = 0, top_bit = 0;
  for (uint32_t y : masked) {
    in_range += y < (1u << kBits) ? 1 : 0;
    top_bit += y >> 31;
  }
  EXPECT_LE(in_range, 4u);
  // Top bit of a uniform word: Binomial(1280, 1/2), 6 sigma = 107 (inputs: always 0).
  EXPECT_NEAR(static_cast<double>(top_bit), masked.size() / 2.0, 107.0);
  // Nobody dropped: the coordinator got shares of self-mask seeds only (k + 1 = 10 per device), never of a
  // mask key s_sk (with t of those and y_u it could remove u's masks).
  EXPECT_EQ(share_s, 0);
  EXPECT_EQ(share_b, per * kAgents);
}

// The other half of acceptance line 1: the same fleet with secure aggregation
// off also sums the rounding integers exactly and dequantizes once, so the
// plain fleet, the secure fleet and the simulator agree bit for bit.
TEST_F(SecAggFleetTest, PlainRoundingFleetIsBitIdenticalToo) {
  const int T = 3;
  std::string toml = Config("\"fedlsa\", \"scafflsa\"", T);
  const std::string on = "secure_aggregation = true\n";
  toml.replace(toml.find(on), on.size(), "secure_aggregation = false\n");
  const auto cfg = WriteExperiment(toml);
  RunFleet(cfg, {});
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 2u * T);
  for (uint32_t alg = 0; alg < 2; ++alg) {
    int identical = 0, compared = 0;
    MaxRelDiff(rounds, PlainSim(cfg, alg), alg, &identical, &compared);
    std::printf("[plain rounding fleet vs simulator, alg %u] rounds bit-identical=%d/%d\n", alg, identical, compared);
    EXPECT_EQ(compared, T);
    EXPECT_EQ(identical, T);
  }
  EXPECT_EQ(Count(ReadFile(dir_ / "coordinator.log"), "secagg"), 0u);
}

// Partial participation: each round's secure round runs over the sampled
// devices only (ids 0..n-1 in agent order), still bit-identical.
TEST_F(SecAggFleetTest, PartialParticipationIsBitIdentical) {
  const int T = 4;
  std::string toml = Config("\"fedlsa\"", T);
  const std::string full = "rate = 1.0\n";
  toml.replace(toml.find(full), full.size(), "rate = 0.6\n");
  const auto cfg = WriteExperiment(toml);
  RunFleet(cfg, {});
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  int identical = 0, compared = 0;
  MaxRelDiff(rounds, PlainSim(cfg, 0), 0, &identical, &compared);
  EXPECT_EQ(identical, T);
  std::set<uint32_t> sizes;
  for (const auto& r : rounds) {
    EXPECT_EQ(r.agents, r.sampled);
    sizes.insert(r.sampled);
  }
  std::printf("[secagg fleet, participation 0.6] rounds bit-identical=%d/%d, sampled per round %u..%u of %d\n", identical,
              T, *sizes.begin(), *sizes.rbegin(), kAgents);
  EXPECT_LT(*sizes.begin(), static_cast<uint32_t>(kAgents));  // the test would be vacuous at full participation
}

// (b) 20% of the devices vanish after sending their masked input in round 2:
// their inputs are in the sum, which the survivors' shares unmask exactly, so
// every round still equals the simulator bit for bit.
TEST_F(SecAggFleetTest, DevicesDroppedAfterMaskingAreUnmaskedExactly) {
  const int T = 3;
  const auto cfg = WriteExperiment(Config("\"fedlsa\"", T));
  RunFleet(cfg, {}, {{0, {"--drop-after-masked", "1"}}, {7, {"--drop-after-masked", "1"}}});
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  const auto sim = PlainSim(cfg, 0);
  int identical = 0, compared = 0;
  MaxRelDiff(rounds, sim, 0, &identical, &compared);
  std::printf("[secagg fleet, 2 of 10 dropped after masking in round 2] rounds compared=%d bit-identical=%d\n", compared,
              identical);
  EXPECT_EQ(identical, T);
  for (const auto& r : rounds) EXPECT_EQ(r.agents, static_cast<uint32_t>(kAgents));
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "round=2 phase=unmask answered=8/10"), 1u) << log;
  EXPECT_EQ(Count(log, "secagg_failed"), 0u);
  EXPECT_GE(Count(ReadFile(dir_ / (Id(0) + ".log")), "dropped the connection after the masked input"), 1u);
}

// A cheating device on the fleet: dev0003 (fedrt-test-device
// --wrong-unmask-shares 1) reveals every unmasking share of round 1 with its
// bytes flipped. The coordinator locates the 10 wrong shares (one per sharing,
// 2 locatable with 10 holders and t = 6), drops them and names dev0003; the round
// is bit-identical to the plain simulator with all 10 inputs (its masked input
// was honest). It is then revoked (told so and dropped, recorded in the state
// db) and round 2 completes with the 9 others. The coordinator stops and
// restarts on its state db: an honest dev0003 is refused at its handshake, and
// round 3 completes with the 9.
TEST_F(SecAggFleetTest, CheatingDeviceIsNamedItsSharesDroppedAndItIsShutOut) {
  const int T = 4;
  std::string toml = Config("\"fedlsa\"", T);
  toml.replace(toml.find("deadline_ms = 10000"), 19, "deadline_ms = 4000");
  toml.replace(toml.find("quorum = 1.0"), 12, "quorum = 0.5");
  const auto cfg = WriteExperiment(toml);
  Provision(dir_ / "keys", kAgents);
  const int port = FreePort();
  pid_t co = StartCoordinator(cfg, port, {"--stop-after-rounds", "3"});
  ASSERT_EQ(WaitPort(), port) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, i == 3 ? std::vector<std::string>{"--wrong-unmask-shares", "1"} : std::vector<std::string>{});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 3u);
  int identical = 0, compared = 0;
  MaxRelDiff({rounds[0], rounds[1]}, PlainSim(cfg, 0), 0, &identical, &compared);
  EXPECT_EQ(identical, 2) << "rounds 0 and 1 equal the plain simulator with every device";
  EXPECT_EQ(rounds[0].agents, static_cast<uint32_t>(kAgents));
  EXPECT_EQ(rounds[1].agents, static_cast<uint32_t>(kAgents));
  EXPECT_EQ(rounds[2].agents, static_cast<uint32_t>(kAgents - 1)) << "round 2 runs without the cheater";
  const std::string log = ReadFile(dir_ / "coordinator.log");
  // (The log counts rounds from 1.)
  EXPECT_EQ(Count(log, "secagg_cheater alg=fedlsa run=0 round=2 index=3 dropped_shares=10"), 1u) << log;
  EXPECT_EQ(Count(log, "secagg_cheater"), 1u) << log;
  EXPECT_EQ(Count(log, "revoked device=dev0003 index=3 reason=secagg: Shamir shares off their polynomial"), 1u) << log;
  EXPECT_EQ(Count(log, "dropped device=dev0003 index=3"), 1u) << log;
  const std::string dev3 = ReadFile(dir_ / (Id(3) + ".log"));
  EXPECT_EQ(Count(dev3, "sent wrong unmasking shares in round 1"), 1u) << dev3;
  EXPECT_EQ(Count(dev3, "refused by the coordinator: identity: device 'dev0003' is revoked: secagg: "), 1u) << dev3;
  {
    auto store = StateStore::Open((dir_ / "coordinator.db").string());
    ASSERT_TRUE(store.ok());
    auto revs = (*store)->load_revocations();
    ASSERT_TRUE(revs.ok());
    ASSERT_EQ(revs->size(), 1u);
    EXPECT_EQ((*revs)[0].id, Id(3));
    EXPECT_EQ((*revs)[0].reason.rfind("secagg: ", 0), 0u) << (*revs)[0].reason;
  }

  // Second life: the revocation comes back from the state db; an honest dev0003 is refused.
  StartDevice(3, port);
  co = StartCoordinator(cfg, port, {}, "coordinator.restart.log");
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.restart.log");
  const std::string again = ReadFile(dir_ / "coordinator.restart.log");
  EXPECT_GE(Count(again, "refused device=dev0003"), 1u) << again;
  rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  EXPECT_EQ(rounds[3].agents, static_cast<uint32_t>(kAgents - 1)) << again;
  for (const auto& r : rounds) EXPECT_TRUE(r.failure.empty()) << r.failure;
}

// A coordinator that lies about who survived (fedrt-test-coordinator
// --secagg-lie 1): in round 1 it tells devices 0-4 that device 9 dropped and
// devices 5-9 that it survived, and forwards every consistency tag. Every
// device finds a tag that does not match its own list and reveals nothing;
// the round fails without a sum, and the next round, told the truth, has all
// ten devices again.
TEST_F(SecAggFleetTest, ALyingCoordinatorIsDetectedByEveryDevice) {
  const int T = 3;
  std::string toml = Config("\"fedlsa\"", T);
  toml.replace(toml.find("deadline_ms = 10000"), 19, "deadline_ms = 4000");
  const auto cfg = WriteExperiment(toml);
  RunFleet(cfg, {"--secagg-lie", "1"});
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  int identical = 0, compared = 0;
  MaxRelDiff({rounds[0]}, PlainSim(cfg, 0), 0, &identical, &compared);
  EXPECT_EQ(identical, 1);
  EXPECT_TRUE(rounds[0].failure.empty());
  EXPECT_FALSE(rounds[1].failure.empty()) << "the lied-about round aggregates nothing";
  EXPECT_EQ(rounds[1].agents, 0u);
  EXPECT_TRUE(rounds[2].failure.empty()) << rounds[2].failure;
  EXPECT_EQ(rounds[2].agents, static_cast<uint32_t>(kAgents));
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "round=2 phase=check answered=10/10"), 1u) << log;
  EXPECT_EQ(Count(log, "round=2 phase=unmask answered=0/10"), 1u) << log;
  EXPECT_EQ(Count(log, "secagg_failed"), 1u) << log;
  for (int i = 0; i < kAgents; ++i)
    EXPECT_EQ(Count(ReadFile(dir_ / (Id(i) + ".log")), "survivor list differs from ours"), 1u)
        << Id(i) << ":\n" << ReadFile(dir_ / (Id(i) + ".log"));
}

// Compression control variates under SecAgg+ (partial participation, and two
// of round 2's sampled devices vanishing after their masked input): the
// server keeps only W = sum_c V_c and moves it by alpha times the secure sum
// of the contributors' messages. Every round equals the simulator without
// secure aggregation bit for bit, and at the end the devices' memories add up
// to the coordinator's W.
TEST_F(SecAggFleetTest, ControlVariatesWithPartialParticipationAndDropoutsAreBitIdentical) {
  const int T = 5;
  std::string toml = Config("\"fedlsa\"", T);
  const std::string full = "rate = 1.0\n";
  toml.replace(toml.find(full), full.size(), "rate = 0.7\n");
  toml += "control_variates = true\n";
  const auto cfg = WriteExperiment(toml);
  config::ExperimentConfig e;
  ASSERT_TRUE(config::LoadExperimentToml(cfg.string(), e).ok());
  auto task = config::MakeTask(e);
  ASSERT_TRUE(task.ok());
  std::map<int, std::vector<std::string>> drop;  // two devices sampled in round 2 (index 1) drop after masking
  for (int i = 0; i < kAgents && drop.size() < 2; ++i)
    if (algorithms::IsSampled(task->seed, 0, static_cast<uint32_t>(i), 1, task->participation)) drop[i] = {"--drop-after-masked", "1"};
  ASSERT_EQ(drop.size(), 2u);
  RunFleet(cfg, {}, drop);
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  int identical = 0, compared = 0;
  MaxRelDiff(rounds, PlainSim(cfg, 0), 0, &identical, &compared);
  std::set<uint32_t> sizes;
  for (const auto& r : rounds) {
    EXPECT_EQ(r.agents, r.sampled);
    sizes.insert(r.sampled);
  }
  std::printf("[secagg fleet + control variates, participation 0.7, 2 dropped after masking] rounds bit-identical=%d/%d\n",
              identical, T);
  EXPECT_EQ(compared, T);
  EXPECT_EQ(identical, T);
  EXPECT_LT(*sizes.begin(), static_cast<uint32_t>(kAgents));  // some round sampled part of the agents
  for (const auto& [i, flags] : drop)
    EXPECT_GE(Count(ReadFile(dir_ / (Id(i) + ".log")), "dropped the connection after the masked input"), 1u) << i;
  // FedLSA's state: theta (d), then W (d).
  const std::vector<double>& state = rounds.back().state;
  const size_t d = rounds.back().theta.size();
  ASSERT_EQ(state.size(), 2 * d);
  double diff = 0, scale = 0;
  for (size_t j = 0; j < d; ++j) {
    double sum = 0;
    for (int i = 0; i < kAgents; ++i) {
      const std::vector<double> v = DeviceMemory(cfg, static_cast<uint32_t>(i));
      EXPECT_EQ(v.size(), d) << "device " << i;
      if (v.size() == d) sum += v[j];
    }
    diff = std::max(diff, std::abs(state[d + j] - sum));
    scale = std::max(scale, std::abs(sum));
  }
  EXPECT_GT(scale, 0.0);
  EXPECT_LE(diff, 1e-12 * scale);
}

// (c) 5 > n - t = 4 devices vanish after masking in round 2: no device's
// self-mask seed has t shares, the round fails with a logged reason and leaves
// the model unchanged; the devices come back and round 3 completes.
TEST_F(SecAggFleetTest, TooManyDropoutsFailTheRoundSafelyAndTheNextRoundCompletes) {
  const int T = 3;
  const auto cfg = WriteExperiment(Config("\"fedlsa\"", T));
  std::map<int, std::vector<std::string>> drop;
  for (int i = 0; i < 5; ++i) drop[i] = {"--drop-after-masked", "1"};
  RunFleet(cfg, {}, drop);
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  EXPECT_EQ(rounds[0].agents, static_cast<uint32_t>(kAgents));
  EXPECT_EQ(rounds[1].agents, 0u);
  EXPECT_EQ(rounds[1].theta, rounds[0].theta) << "a failed secure round must leave theta_t unchanged";
  EXPECT_EQ(rounds[2].agents, static_cast<uint32_t>(kAgents));
  EXPECT_NE(rounds[2].theta, rounds[1].theta);
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "secagg_failed alg=fedlsa run=0 round=2 reason="), 1u) << log;
  EXPECT_EQ(Count(log, "round=3 phase=unmask answered=10/10"), 1u) << log;
}

// Bad input in every phase: device 0 runs in this process and, before each of
// its genuine SecAgg+ messages, sends malformed or misplaced ones (short key,
// another round, a later phase's message, a plain Update, a short ciphertext,
// a masked vector of d - 1 values, an unknown share kind). Each is rejected
// with a reason before it reaches the SecAgg+ server, the device stays in the
// round, and every round still equals the simulator bit for bit.
TEST_F(SecAggFleetTest, MalformedSecAggMessagesAreRejectedAndRoundsStayExact) {
  const int T = 2;
  const auto cfg = WriteExperiment(Config("\"fedlsa\"", T));
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 1; i < kAgents; ++i) StartDevice(i, port);
  DeviceOptions opt = InProcessDevice(0, port);
  DeviceHooks hooks;
  hooks.before_send = [&](const wire::Envelope& m, const RawWriter& raw) {
    wire::Envelope bad = m;
    if (m.has_secagg_advertise()) {
      const auto& a = m.secagg_advertise();
      bad.mutable_secagg_advertise()->mutable_c_pk()->pop_back();  // 31-byte key
      (void)raw(wire::EncodeFrame(bad));
      bad = m;
      bad.mutable_secagg_advertise()->set_round(a.round() + 1);  // another round
      (void)raw(wire::EncodeFrame(bad));
      wire::Envelope early;  // a masked input before keys were even shared
      auto* em = early.mutable_secagg_masked();
      em->set_algorithm_index(a.algorithm_index());
      em->set_run(a.run());
      em->set_round(a.round());
      for (int i = 0; i < 8; ++i) em->add_masked(1u);
      (void)raw(wire::EncodeFrame(early));
      wire::Envelope upd;  // the plain path's message
      auto* u = upd.mutable_update();
      u->set_algorithm_index(a.algorithm_index());
      u->set_run(a.run());
      u->set_round(a.round());
      u->set_encoding(1);
      u->add_payload(std::string(16, '\0'));
      (void)raw(wire::EncodeFrame(upd));
    } else if (m.has_secagg_shares() && m.secagg_shares().shares_size() > 0) {
      bad.mutable_secagg_shares()->mutable_shares(0)->mutable_ciphertext()->pop_back();
      (void)raw(wire::EncodeFrame(bad));
    } else if (m.has_secagg_masked()) {
      bad.mutable_secagg_masked()->mutable_masked()->RemoveLast();
      (void)raw(wire::EncodeFrame(bad));
    } else if (m.has_secagg_unmask() && m.secagg_unmask().shares_size() > 0) {
      bad.mutable_secagg_unmask()->mutable_shares(0)->set_kind(3);
      (void)raw(wire::EncodeFrame(bad));
    }
    return true;
  };
  opt.hooks = &hooks;
  std::thread dev([&] { (void)RunDevice(opt); });
  const int rc = Wait(co, 120000);
  dev.join();
  ASSERT_EQ(rc, 0) << ReadFile(dir_ / "coordinator.log");
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  int identical = 0, compared = 0;
  MaxRelDiff(rounds, PlainSim(cfg, 0), 0, &identical, &compared);
  EXPECT_EQ(identical, T);
  for (const auto& r : rounds) EXPECT_EQ(r.agents, static_cast<uint32_t>(kAgents));
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Count(log, "rejected device=dev0000"), 7u * T) << log;
  EXPECT_EQ(Count(log, "keys must be 32 bytes"), 1u * T);
  EXPECT_EQ(Count(log, "message for another round"), 1u * T);
  EXPECT_EQ(Count(log, "phase 3 message while phase 1 is open"), 1u * T);
  EXPECT_EQ(Count(log, "answer with SecAggAdvertise, not an Update"), 1u * T);
  EXPECT_EQ(Count(log, "share ciphertext of 88 bytes"), 1u * T);
  EXPECT_EQ(Count(log, "masked input has 7 values"), 1u * T);
  EXPECT_EQ(Count(log, "unmask share needs kind 1 or 2"), 1u * T);
  EXPECT_EQ(Count(log, "secagg_failed"), 0u);
}

// The coordinator is killed in the middle of a secure round (keys shared,
// masked inputs pending) and restarted on its state db: the round starts over
// with fresh keys, each device masks the same pending integers again, and every
// round equals the simulator bit for bit.
TEST_F(SecAggFleetTest, CoordinatorKilledMidRoundRestartsTheSecureRoundExactly) {
  const int T = 4;
  const auto cfg = WriteExperiment(Config("\"scafflsa\"", T));
  Provision(dir_ / "keys", kAgents);
  const int port = FreePort();
  pid_t co = StartCoordinator(cfg, port, {});
  ASSERT_EQ(WaitPort(), port) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port, {"--delay-ms", "100"});
  const fs::path log = dir_ / "coordinator.log";
  ASSERT_TRUE(WaitForLog(log, "round=2 phase=advertise answered=10/10", 60000)) << ReadFile(log);
  Kill(co);
  const std::string first = ReadFile(log);
  ASSERT_EQ(Count(first, "round alg=scafflsa run=0 round=2 "), 0u) << "round 2 closed before the kill; " << first;
  ASSERT_EQ(Rounds().size(), 1u);
  co = StartCoordinator(cfg, port, {}, "coordinator.restart.log");
  ASSERT_EQ(Wait(co, 90000), 0) << ReadFile(dir_ / "coordinator.restart.log");
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  int identical = 0, compared = 0;
  MaxRelDiff(rounds, PlainSim(cfg, 0), 0, &identical, &compared);
  std::printf("[secagg fleet, coordinator killed in round 2 and restarted] rounds compared=%d bit-identical=%d\n",
              compared, identical);
  EXPECT_EQ(identical, T);
  for (const auto& r : rounds) EXPECT_EQ(r.agents, static_cast<uint32_t>(kAgents));
  size_t resubmitted = 0;
  for (int i = 0; i < kAgents; ++i) resubmitted += Count(ReadFile(dir_ / (Id(i) + ".log")), "resubmit alg=0 run=0 round=1");
  EXPECT_EQ(resubmitted, static_cast<size_t>(kAgents));  // every device re-entered round 2 with its pending input
}

// Settings the fleet cannot honour are refused at start with a reason.
TEST_F(SecAggFleetTest, CoordinatorRefusesSecureAggregationSettingsItCannotRun) {
  Provision(dir_ / "keys", kAgents);
  const std::string base = Config("\"fedlsa\"", 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"secagg_dropout = 0.2\n", "secagg_dropout is simulator-only"},
  };
  for (const auto& [extra, reason] : cases) {
    const auto cfg = WriteExperiment(base + extra);
    const pid_t co = StartCoordinator(cfg, 0, {}, "refused.log");
    EXPECT_NE(Wait(co, 30000), 0) << extra;
    const std::string log = ReadFile(dir_ / "refused.log");
    EXPECT_NE(log.find(reason), std::string::npos) << extra << log;
    fs::remove(dir_ / "refused.log");
  }
}

}  // namespace secagg_fleet
}  // namespace fedrt::net::testing
