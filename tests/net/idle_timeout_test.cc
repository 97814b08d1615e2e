// The idle timeout of registered devices (network.idle_timeout_ms, issue 19):
// a device that asked for heartbeats and then falls silent is dropped; one
// that heartbeats, or one that never asked for them (the firmware), stays;
// the dropped one reconnects and the run's rounds are the simulator's.
#include <atomic>
#include <thread>

#include "fedrt.pb.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

// 4 agents, 2 rounds; round 0 waits for all 4, so the first three sit
// registered with no round open until the test starts the fourth.
std::string IdleExperiment(long idle_ms) {
  std::string toml = TinyExperiment("idle_timeout_ms = " + std::to_string(idle_ms) + "\n");
  toml.replace(toml.find("agents = 2"), 10, "agents = 4");
  toml.replace(toml.find("rounds = 1"), 10, "rounds = 2");
  return toml;
}

// dev0000 (in this process) swallows its heartbeats until the coordinator has
// dropped it once; dev0001 (a fedrt-device process) heartbeats; dev0002 (in
// this process) does not offer heartbeats, as the firmware does not, and says
// nothing at all. After dev0000's drop and re-registration dev0003 arrives, a
// board whose local work outlasts the timeout, and both rounds run with all
// four devices, bit-identical to the simulator.
TEST_F(NetTest, SilentDeviceIsDroppedHeartbeatingAndNonHeartbeatingOnesStay) {
  const long kIdleMs = 1200;  // heartbeats every 300 ms
  const auto cfg = WriteExperiment(IdleExperiment(kIdleMs));
  Provision(dir_ / "keys", 4);
  const int port = FreePort();
  pid_t co = StartCoordinator(cfg, port, {});
  ASSERT_EQ(WaitPort(), port) << ReadFile(dir_ / "coordinator.log");
  const fs::path log = dir_ / "coordinator.log";

  StartDevice(1, port);
  ASSERT_TRUE(WaitForLog(log, "ready device=dev0001", 30000)) << ReadFile(log);

  std::atomic<int> replies{0}, swallowed{0}, sent_by_quiet{0};
  DeviceHooks mute;
  mute.before_send = [&](const wire::Envelope& m, const RawWriter&) {
    if (m.has_task_reply()) ++replies;
    if (m.has_heartbeat() && replies.load() == 1) {  // its first connection: silent after the TaskReply
      ++swallowed;
      return false;
    }
    return true;
  };
  DeviceOptions silent = InProcessDevice(0, port);
  silent.hooks = &mute;
  silent.quiet = true;
  DeviceHooks count;
  count.before_send = [&](const wire::Envelope& m, const RawWriter&) {
    if (m.has_heartbeat()) ++sent_by_quiet;
    return true;
  };
  DeviceOptions quiet = InProcessDevice(2, port);
  quiet.heartbeats = false;
  quiet.hooks = &count;
  quiet.quiet = true;
  Status silent_st = Status::Ok(), quiet_st = Status::Ok();
  std::thread quiet_thread([&] { quiet_st = RunDevice(quiet); });
  ASSERT_TRUE(WaitForLog(log, "ready device=dev0002", 30000)) << ReadFile(log);
  std::thread silent_thread([&] { silent_st = RunDevice(silent); });

  // dropped within 1 to 1.25 timeouts of its TaskReply, then back
  EXPECT_TRUE(WaitForLog(log, "disconnected device=dev0000 index=0 reason=idle: nothing received for", 20000))
      << ReadFile(log);
  EXPECT_TRUE(WaitForLog(log, "ready device=dev0000", 20000, 2)) << ReadFile(log);
  // dev0001 and dev0002 have been registered and silent but for heartbeats
  // for longer than dev0000 was before its drop: still connected.
  std::string mid = ReadFile(log);
  EXPECT_EQ(Count(mid, "disconnected device=dev0001"), 0u) << mid;
  EXPECT_EQ(Count(mid, "disconnected device=dev0002"), 0u) << mid;
  EXPECT_GE(swallowed.load(), 3) << "dev0000 sends a heartbeat every 300 ms while it waits";
  EXPECT_EQ(sent_by_quiet.load(), 0) << "a device that offers no heartbeats sends none";

  // dev0003 is a slow board: it sleeps 1.8 s before each update, longer than
  // the timeout, with its connection silent; owing the open round, it stays.
  StartDevice(3, port, {"--delay-ms", "1800"});
  EXPECT_EQ(Wait(co, 120000), 0) << ReadFile(log);
  if (quiet_thread.joinable()) quiet_thread.join();
  if (silent_thread.joinable()) silent_thread.join();
  EXPECT_TRUE(quiet_st.ok()) << quiet_st.message();
  EXPECT_TRUE(silent_st.ok()) << silent_st.message();

  const std::string all = ReadFile(log);
  EXPECT_EQ(Count(all, "reason=idle"), 1u) << all;
  EXPECT_NE(all.find("idle_timeout_ms=1200"), std::string::npos) << "the limits line names the timeout";
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 2u);
  for (const auto& r : rounds) EXPECT_EQ(r.agents, 4u) << "round " << r.round;
  int identical = 0, compared = 0;
  MaxRelDiff(rounds, SimThetas(cfg), 0, &identical, &compared);
  EXPECT_EQ(compared, 2);
  EXPECT_EQ(identical, 2);
}

}  // namespace
}  // namespace fedrt::net::testing
