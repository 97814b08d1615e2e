// Acceptance (bad input): a deliberately misbehaving client that completed a
// valid handshake sends random bytes, a length prefix above the maximum, a
// payload of the wrong size, NaN and Inf values, stale and future round
// numbers, a duplicate update, a wrong number of segments, a message of the
// wrong direction, and an update while not sampled. Each is rejected with a
// log line and an error reason; the coordinator keeps serving everyone else,
// and every round's result equals the simulator's, i.e. the result without the
// misbehaviour. The same for SCAFFLSA (raw float64), FedAvg with 4-level
// dithering (the codec's bytes) and Scaffold (raw, two vectors per update).
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/device/driver.h"
#include "fedrt/tls/tls.h"
#include "fedrt/wire/frame.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {


std::string Config(const std::string& family, int agents, int T, double q, int seed) {
  std::string problem, algorithm, compression;
  if (family == "fedavg-dither" || family == "scaffold") {
    problem = "kind = \"lsq\"\ndim = 6\n";
    algorithm = family == "scaffold" ? "names = [\"scaffold\"]\nstep = 0.05\nlocal_steps = 10\n"
                                     : "names = [\"fedavg\"]\nstep = 0.05\nlocal_steps = 10\n";
    if (family == "fedavg-dither") compression = "[compression]\nquantizer = \"dither\"\nlevels = 4\n";
  } else {
    problem = "kind = \"garnet\"\nheterogeneity = \"high\"\n";
    algorithm = "names = [\"scafflsa\"]\nstep = 0.01\nlocal_steps = 1000\n";
  }
  return "[problem]\n" + problem + "agents = " + std::to_string(agents) + "\n[algorithm]\n" + algorithm +
         "[participation]\nrate = " + std::to_string(q) + "\n[run]\nrounds = " + std::to_string(T) +
         "\nruns = 1\nseed = " + std::to_string(seed) +
         "\n[network]\ndeadline_ms = 30000\nquorum = 0.5\nstart_timeout_ms = 60000\n" + compression;
}

class BadInputTest : public NetTest, public ::testing::WithParamInterface<std::string> {};

// Writes `v` over the scalar at byte offset `at` of a raw float64 payload, or
// over the norm (bytes 0-3, float32) of a codec payload.
void Poison(wire::Update& u, bool codec, double v) {
  std::string p = u.payload(0);
  if (codec) {
    const float f = static_cast<float>(v);
    std::memcpy(&p[0], &f, 4);
  } else {
    std::memcpy(&p[8], &v, 8);  // coordinate 1
  }
  u.set_payload(0, p);
}

TEST_P(BadInputTest, MisbehavingClientIsRejectedAndRoundsEqualSimulator) {
  const std::string family = GetParam();
  const bool codec = family == "fedavg-dither";
  const int n = 4, T = 10;
  const auto cfg = WriteExperiment(Config(family, n, T, 1.0, 5));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  for (int i = 1; i < n; ++i) StartDevice(i, port);

  // Device 0 runs in this process with the real device code and a hook that
  // misbehaves once per round before sending its genuine update.
  DeviceOptions opt = InProcessDevice(0, port);
  std::set<uint32_t> done;
  size_t sizes = 0;
  DeviceHooks hooks;
  hooks.before_send = [&](const wire::Envelope& m, const RawWriter& raw) {
    if (!m.has_update()) return true;
    const wire::Update& u = m.update();
    if (!done.insert(u.round()).second) return true;  // resubmission after a forced disconnect: behave
    sizes = u.payload(0).size();
    wire::Envelope e = m;
    wire::Update& b = *e.mutable_update();
    switch (u.round()) {
      case 0: {  // length prefix above the maximum
        const uint32_t big = task::kMaxLinuxFrameBytes + 1;
        const char hdr[4] = {char(big >> 24), char(big >> 16), char(big >> 8), char(big)};
        (void)raw(std::string(hdr, 4));
        return true;
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
        return true;
      }
      case 2: b.mutable_payload(0)->resize(u.payload(0).size() - (codec ? 1 : 8)); break;  // wrong size
      case 3: Poison(b, codec, std::numeric_limits<double>::quiet_NaN()); break;
      case 4: Poison(b, codec, std::numeric_limits<double>::infinity()); break;
      case 5: b.set_round(u.round() - 2); break;  // stale round (round - 1 would be a late duplicate)
      case 6: b.set_round(u.round() + 1); break;  // future round
      case 7: break;                               // duplicate: the genuine update twice
      case 8: {                                    // a coordinator-only message
        wire::Envelope a;
        a.mutable_announce()->set_round(u.round());
        (void)raw(wire::EncodeFrame(a));
        return true;
      }
      case 9: b.add_payload(u.payload(0)); break;  // a second segment the algorithm does not have
    }
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
  std::vector<std::string> reasons = {"reason=frame_too_large", "reason=malformed: undecodable message",
                                      "reason=stale_round", "reason=future_round", "reason=duplicate",
                                      "reason=malformed: a message devices do not send",
                                      "reason=malformed: 2 payload segments, expected 1"};
  if (codec) {
    reasons.push_back(fmt::format("segment 0 ({} bytes) rejected: dither decode: payload truncated", sizes - 1));
    reasons.push_back("rejected: dither decode: norm is NaN or infinite");
  } else {
    reasons.push_back(fmt::format("segment 0 ({} bytes) rejected: codec: raw payload has the wrong length", sizes - 8));
    reasons.push_back("rejected: codec: raw payload has a NaN or infinite value");
  }
  for (const auto& reason : reasons) EXPECT_NE(log.find(reason), std::string::npos) << reason << "\n" << log;
  EXPECT_GE(Count(log, codec ? "norm is NaN or infinite" : "raw payload has a NaN or infinite value"), 2u) << log;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  for (const auto& r : rounds) EXPECT_EQ(r.agents, static_cast<uint32_t>(n));
  const auto sim = SimThetas(cfg);
  int identical = 0, compared = 0;
  EXPECT_LE(MaxRelDiff(rounds, sim, 0, &identical, &compared), kRelTol);
  EXPECT_EQ(compared, T);
}

INSTANTIATE_TEST_SUITE_P(Families, BadInputTest, ::testing::Values("scafflsa", "fedavg-dither", "scaffold"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string s = i.param;
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

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
  const auto cfg = WriteExperiment(Config("scafflsa", n, 1, q, seed));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  for (int i = 0; i < n; ++i)
    if (i != x) StartDevice(i, port, {"--delay-ms", "1000"});
  TlsClient c;
  ASSERT_TRUE(c.init({Id(x), (dir_ / "keys" / "devices" / Id(x) / "device.psk").string(), "", "", ""}).ok());
  ASSERT_TRUE(c.connect("127.0.0.1", static_cast<uint16_t>(port), 100).ok());
  wire::Envelope h;
  h.mutable_hello()->set_protocol_version(wire::kProtocolVersion);
  h.mutable_hello()->set_device_id(Id(x));
  ASSERT_TRUE(c.write_all(wire::EncodeFrame(h)).ok());
  wire::Envelope yes;
  yes.mutable_task_reply()->set_accepted(true);
  ASSERT_TRUE(c.write_all(wire::EncodeFrame(yes)).ok());
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "open alg=scafflsa run=0 round=1 ", 30000));
  wire::Envelope u;
  u.mutable_update()->set_round(0);
  u.mutable_update()->add_payload(std::string(64, '\0'));
  ASSERT_TRUE(c.write_all(wire::EncodeFrame(u)).ok());
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
