// Acceptance (chunked transfer, docs/architecture.md): a model longer than one
// chunk goes down and comes back up in chunks over TLS, and the rounds equal
// the simulator's bit for bit (FedAvg and Scaffold least squares, d = 3000:
// 24 and 48 KB broadcasts and updates, two to three chunks each way). A device
// that sends a chunk out of order, a duplicate, one past the announced size
// and one with another total is refused with those reasons; a device cut off
// in the middle of its upload reconnects, is re-announced the round with the
// bytes the coordinator holds, sends only the rest, and is counted once;
// every round still equals the simulator's.
#include <map>
#include <thread>
#include <vector>

#include "fedrt/device/driver.h"
#include "fedrt/wire/frame.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

std::string Config(const std::string& names, int agents, int T) {
  return "[problem]\nkind = \"lsq\"\ndim = 3000\nsamples = 20\nl2 = 0.1\nagents = " + std::to_string(agents) +
         "\n[algorithm]\nnames = [" + names + "]\nstep = 0.0005\nlocal_steps = 5\nbatch = 2\n[run]\nrounds = " +
         std::to_string(T) + "\nruns = 1\nseed = 3\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n";
}

class ChunkedFleetTest : public NetTest {};

TEST_F(ChunkedFleetTest, FedAvgAndScaffoldInChunksEqualTheSimulator) {
  const int n = 4, T = 4;
  const auto cfg = WriteExperiment(Config("\"fedavg\", \"scaffold\"", n, T));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  std::vector<pid_t> devs;
  for (int i = 0; i < n; ++i) devs.push_back(StartDevice(i, port));
  const int rc = Wait(co, 120000);
  for (pid_t d : devs) Wait(d, 10000);
  const std::string log = ReadFile(dir_ / "coordinator.log");
  ASSERT_EQ(rc, 0) << log;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(2 * T)) << log;
  for (const auto& r : rounds) {
    EXPECT_EQ(r.agents, static_cast<uint32_t>(n));
    EXPECT_EQ(r.bits_down, static_cast<uint64_t>(n) * 64 * 3000 * (r.algorithm == 0 ? 1 : 2));  // x (and c)
    EXPECT_EQ(r.bits_up, static_cast<uint64_t>(n) * 64 * 3000 * (r.algorithm == 0 ? 1 : 2));    // x (or (dx, dc))
  }
  for (uint32_t alg = 0; alg < 2; ++alg) {
    int identical = 0, compared = 0;
    EXPECT_EQ(MaxRelDiff(rounds, SimThetas(cfg, alg), alg, &identical, &compared), 0.0);
    EXPECT_EQ(identical, T) << "algorithm " << alg;
  }
}

TEST_F(ChunkedFleetTest, ChunkFaultsAreRefusedAndACutUploadResumesOnce) {
  const int n = 3, T = 6;
  const auto cfg = WriteExperiment(Config("\"fedavg\"", n, T));
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  for (int i = 1; i < n; ++i) StartDevice(i, port);

  // Device 0 in this process: real device code, and hooks that send one bad
  // chunk in each of rounds 0-3, drop the connection mid-upload in round 4
  // and send round 5's out-of-order chunk three times (logged once, then counted).
  DeviceOptions opt = InProcessDevice(0, port);
  std::map<uint32_t, std::vector<uint64_t>> offsets;  // round -> offsets of the chunks sent
  std::map<uint32_t, int> headers;                    // round -> update headers sent
  std::string previous;                               // the last chunk frame sent
  bool dropped = false;
  DeviceHooks hooks;
  hooks.before_send = [&](const wire::Envelope& m, const RawWriter& raw) {
    if (m.has_update()) ++headers[m.update().round()];
    if (!m.has_chunk()) return true;
    const wire::Chunk& c = m.chunk();
    offsets[c.round()].push_back(c.offset());
    const size_t at = c.round() == 1 || c.round() == 2 ? 2 : 1;  // one fault per round, before chunk `at`
    if (offsets[c.round()].size() != at) return true;
    wire::Envelope bad = m;
    wire::Chunk& b = *bad.mutable_chunk();
    switch (c.round()) {
      case 0: b.set_offset(c.data().size()); break;       // where the second chunk goes: out of order
      case 1: (void)raw(previous); return true;           // the first chunk again: a duplicate
      case 2: b.mutable_data()->append(8, '\0'); break;  // the last chunk, 8 bytes longer: past the size
      case 3: b.set_total(c.total() + 8); break;          // another total
      case 5:
        b.set_offset(c.data().size());
        (void)raw(wire::EncodeFrame(bad));
        (void)raw(wire::EncodeFrame(bad));
        break;
      default: return true;
    }
    (void)raw(wire::EncodeFrame(bad));
    return true;
  };
  hooks.after_send = [&](const wire::Envelope& m) {
    if (m.has_chunk()) previous = wire::EncodeFrame(m);
    if (m.has_chunk() && m.chunk().round() == 4 && !dropped) {  // cut off after the first chunk
      dropped = true;
      return false;
    }
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
  for (const char* reason : {"reason=chunk: chunk out of order: bytes from 16320 of segment 0, expected 0 of segment 0",
                             "reason=chunk: duplicate chunk: bytes [0, 16320) of segment 0 were already taken",
                             "reason=chunk: chunk past the announced size: bytes [16320, 24008) of a 24000-byte segment 0",
                             "reason=chunk: chunk total 24008 disagrees with the announced size 24000 of segment 0"})
    EXPECT_NE(log.find(reason), std::string::npos) << reason << "\n" << log;
  const std::string repeated = "rejected device=dev0000 alg=0 run=0 round=5 reason=chunk: chunk out of order";
  EXPECT_EQ(Count(log, repeated), 1u) << log;
  EXPECT_NE(log.find("rejected device=dev0000 2 more times: alg=0 run=0 round=5 reason=chunk: chunk out of order"),
            std::string::npos)
      << log;
  // Round 4: the first chunk, the cut, then only the second (the coordinator held the first).
  EXPECT_EQ(offsets[4], (std::vector<uint64_t>{0, 16320})) << log;
  EXPECT_EQ(headers[4], 2);
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  for (const auto& r : rounds) {
    EXPECT_EQ(r.agents, static_cast<uint32_t>(n)) << "round " << r.round;
    EXPECT_EQ(r.bits_up, static_cast<uint64_t>(n) * 64 * 3000) << "round " << r.round;  // counted once
  }
  int identical = 0, compared = 0;
  EXPECT_EQ(MaxRelDiff(rounds, SimThetas(cfg), 0, &identical, &compared), 0.0);
  EXPECT_EQ(identical, T);
}

}  // namespace
}  // namespace fedrt::net::testing
