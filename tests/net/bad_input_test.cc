// Acceptance (bad input): a deliberately misbehaving client that completed a
// valid handshake sends random bytes, a length prefix above the maximum, a
// wrong dimension, NaN and Inf values, stale and future round numbers, a
// duplicate update, a message of the wrong direction, and an update while not
// sampled. Each is rejected with a log line and an error reason; the
// coordinator keeps serving everyone else, and every round's result equals
// the simulator's, i.e. the result without the misbehaviour.
#include <cmath>
#include <limits>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/net/device.h"
#include "fedrt/net/network_config.h"
#include "fedrt/net/wire.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

constexpr double kRelTol = 1e-12;  // see fleet_test.cc: arrival-order summation

std::string Config(int agents, int T, double q, int seed) {
  return "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = " + std::to_string(agents) +
         "\n[algorithm]\nnames = [\"scafflsa\"]\nstep = 0.01\nlocal_steps = 1000\n[participation]\nrate = " +
         std::to_string(q) + "\n[run]\nrounds = " + std::to_string(T) + "\nruns = 1\nseed = " + std::to_string(seed) +
         "\n[network]\ndeadline_ms = 30000\nquorum = 0.5\nstart_timeout_ms = 60000\n";
}

std::string Frame(const wire::Envelope& e) { return EncodeFrame(e); }

TEST_F(NetTest, MisbehavingClientIsRejectedAndRoundsEqualSimulator) {
  const int n = 4, T = 9;
  const auto cfg = WriteExperiment(Config(n, T, 1.0, 5));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  for (int i = 1; i < n; ++i) StartDevice(i, port, cfg);

  // Device 0 runs in this process with the real device code and a hook that
  // misbehaves once per round before sending its genuine update.
  DeviceOptions opt;
  opt.host = "127.0.0.1";
  opt.port = static_cast<uint16_t>(port);
  opt.id = Id(0);
  ASSERT_TRUE(sim::LoadExperimentToml(cfg.string(), opt.experiment).ok());
  opt.credentials.identity = Id(0);
  opt.credentials.psk_file = (dir_ / "keys" / "devices" / Id(0) / "device.psk").string();
  opt.state_file = (dir_ / "dev0000.state").string();
  opt.give_up_ms = 30000;
  std::set<uint32_t> done;
  opt.before_update = [&](const wire::Update& u, const std::function<Status(const std::string&)>& raw) {
    if (!done.insert(u.round()).second) return;  // resubmission after a forced disconnect: behave
    wire::Envelope e;
    *e.mutable_update() = u;
    const int d = static_cast<int>(u.payload().size() / sizeof(double));
    std::vector<double> v(static_cast<size_t>(d), 0.5);
    switch (u.round()) {
      case 0: {  // length prefix above the maximum
        const uint32_t big = kMaxFrameBytes + 1;
        const char hdr[4] = {char(big >> 24), char(big >> 16), char(big >> 8), char(big)};
        (void)raw(std::string(hdr, 4));
        break;
      }
      case 1: {  // random bytes (a valid small length, random body)
        std::string r(4, '\0');
        r[3] = 40;
        uint64_t x = 0x9E3779B97F4A7C15ull;
        for (int i = 0; i < 40; ++i) {
          x = x * 6364136223846793005ull + 1442695040888963407ull;
          r.push_back(static_cast<char>(x >> 56));
        }
        (void)raw(r);
        break;
      }
      case 2:  // wrong dimension
        e.mutable_update()->set_payload(EncodeRawPayload(v.data(), d - 1));
        (void)raw(Frame(e));
        break;
      case 3:  // NaN
        v[1] = std::numeric_limits<double>::quiet_NaN();
        e.mutable_update()->set_payload(EncodeRawPayload(v.data(), d));
        (void)raw(Frame(e));
        break;
      case 4:  // Inf
        v[2] = std::numeric_limits<double>::infinity();
        e.mutable_update()->set_payload(EncodeRawPayload(v.data(), d));
        (void)raw(Frame(e));
        break;
      case 5:  // stale round
        e.mutable_update()->set_round(u.round() - 1);
        (void)raw(Frame(e));
        break;
      case 6:  // future round
        e.mutable_update()->set_round(u.round() + 1);
        (void)raw(Frame(e));
        break;
      case 7:  // duplicate: the genuine update twice (the device sends it again next)
        (void)raw(Frame(e));
        break;
      case 8: {  // a coordinator-only message
        wire::Envelope a;
        a.mutable_announce()->set_round(u.round());
        (void)raw(Frame(a));
        break;
      }
    }
  };
  Status dev_status = Status::Ok();
  std::thread dev([&] { dev_status = RunDevice(opt); });
  const int rc = Wait(co, 120000);
  dev.join();
  const std::string log = ReadFile(dir_ / "coordinator.log");
  ASSERT_EQ(rc, 0) << log;
  EXPECT_TRUE(dev_status.ok()) << dev_status.message();
  for (const char* reason : {"reason=frame_too_large", "reason=malformed: undecodable message",
                             "reason=dimension: payload has 56 bytes, expected 64", "reason=non_finite: payload value 1 is nan",
                             "reason=non_finite: payload value 2 is inf", "reason=stale_round", "reason=future_round",
                             "reason=duplicate", "reason=malformed: unexpected message type"})
    EXPECT_NE(log.find(reason), std::string::npos) << reason << "\n" << log;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  for (const auto& r : rounds) EXPECT_EQ(r.agents, static_cast<uint32_t>(n));
  const auto sim = SimThetas(cfg);
  int identical = 0, compared = 0;
  EXPECT_LE(MaxRelDiff(rounds, sim, 0, &identical, &compared), kRelTol);
  EXPECT_EQ(compared, T);
}

TEST_F(NetTest, UpdateFromUnsampledDeviceIsRejected) {
  const int n = 6;
  const double q = 0.5;
  // A seed where agent `x` is not sampled in round 0 but at least two others are.
  int seed = 1, x = -1;
  for (; seed < 100 && x < 0; ++seed) {
    int sampled = 0, first_out = -1;
    for (int c = 0; c < n; ++c) {
      if (algorithms::IsSampled(seed, 0, c, 0, q)) ++sampled;
      else if (first_out < 0) first_out = c;
    }
    if (sampled >= 2 && first_out >= 0) {
      x = first_out;
      break;
    }
  }
  ASSERT_GE(x, 0);
  const auto cfg = WriteExperiment(Config(n, 1, q, seed));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  for (int i = 0; i < n; ++i)
    if (i != x) StartDevice(i, port, cfg, {"--delay-ms", "1000"});
  sim::ExperimentConfig e;
  ASSERT_TRUE(sim::LoadExperimentToml(cfg.string(), e).ok());
  TlsClient c;
  ASSERT_TRUE(c.init({Id(x), (dir_ / "keys" / "devices" / Id(x) / "device.psk").string(), "", "", ""}).ok());
  ASSERT_TRUE(c.connect("127.0.0.1", static_cast<uint16_t>(port), 100).ok());
  wire::Envelope h;
  h.mutable_hello()->set_protocol_version(kProtocolVersion);
  h.mutable_hello()->set_device_id(Id(x));
  h.mutable_hello()->set_config_fingerprint(ProblemFingerprint(e));
  ASSERT_TRUE(c.write_all(EncodeFrame(h)).ok());
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "open alg=scafflsa run=0 round=1 ", 30000));
  wire::Envelope u;
  std::vector<double> v(8, 0.5);
  u.mutable_update()->set_round(0);
  u.mutable_update()->set_payload(EncodeRawPayload(v.data(), 8));
  ASSERT_TRUE(c.write_all(EncodeFrame(u)).ok());
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "reason=not_sampled", 5000)) << ReadFile(dir_ / "coordinator.log");
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  c.close();
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 1u);
  const auto sim = SimThetas(cfg);
  int identical = 0, compared = 0;
  EXPECT_LE(MaxRelDiff(rounds, sim, 0, &identical, &compared), kRelTol);
  EXPECT_EQ(compared, 1);
}

}  // namespace
}  // namespace fedrt::net::testing
