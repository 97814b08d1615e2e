// State that never goes back silently (docs/security.md, "State that never
// goes back"), with the real coordinator and devices: a run stopped cleanly
// after round 3 (its db copied as a backup), resumed, and killed with
// SIGKILL after round 10. Then
// - its -wal file deleted: the db holds 3 rounds, its watermark 10 or more:
//   the coordinator refuses to start (exit status 2) and says why;
// - its state emptied (a file of zero bytes): the same refusal;
// - the backup of round 3 restored whole (db and watermark): the devices'
//   pending updates show a later round, and the coordinator stops (exit
//   status 1) naming the device and the rounds;
// - --accept-rollback: the run resumes from round 4 and completes.
// Before these checks the coordinator resumed from round 4 (or 1) silently.
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "net_harness.h"

namespace fedrt::net::testing {

TEST_F(NetTest, RolledBackOrEmptiedStateStopsTheCoordinatorInsteadOfResuming) {
  constexpr int kAgents = 4;
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = 4\ndim = 5\n[algorithm]\nnames = [\"fedavg\"]\nstep = 0.05\n"
      "local_steps = 10\n[run]\nrounds = 40\nseed = 3\n[network]\ndeadline_ms = 30000\nquorum = 1.0\n"
      "start_timeout_ms = 60000\n");
  Provision(dir_ / "keys", kAgents);
  const int port = FreePort();
  const fs::path db = dir_ / "coordinator.db", mark = dir_ / "coordinator.db.rounds";
  pid_t co = StartCoordinator(cfg, port, {"--stop-after-rounds", "3"}, "first.log");
  ASSERT_EQ(WaitPort(), port) << ReadFile(dir_ / "first.log");
  for (int i = 0; i < kAgents; ++i) StartDevice(i, port, {"--delay-ms", "30"});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "first.log");
  ASSERT_EQ(ReadFile(mark), "3 committed_rounds\n");
  ASSERT_FALSE(fs::exists(dir_ / "coordinator.db-wal")) << "checkpointed when the coordinator exits";
  fs::create_directories(dir_ / "backup");  // a stopped coordinator's db is whole without a -wal
  for (const fs::path& f : {db, mark}) fs::copy_file(f, dir_ / "backup" / f.filename());

  co = StartCoordinator(cfg, port, {}, "second.log");
  ASSERT_TRUE(WaitForLog(dir_ / "second.log", "round alg=fedavg run=0 round=10 ", 60000)) << ReadFile(dir_ / "second.log");
  // A device's update for round 11 is out (persisted before it left): it is pending when the coordinator dies.
  ASSERT_TRUE(WaitForLog(dir_ / (Id(1) + ".log"), "update alg=0 run=0 round=10 ", 60000)) << ReadFile(dir_ / (Id(1) + ".log"));
  Kill(co);
  ASSERT_TRUE(fs::exists(dir_ / "coordinator.db-wal"));

  // The -wal deleted after the crash: rounds 4 to 10 or more are gone from the db.
  fs::remove(dir_ / "coordinator.db-wal");
  fs::remove(dir_ / "coordinator.db-shm");
  co = StartCoordinator(cfg, port, {}, "no_wal.log");
  EXPECT_EQ(Wait(co, 60000), 2) << ReadFile(dir_ / "no_wal.log");
  std::string log = ReadFile(dir_ / "no_wal.log");
  EXPECT_NE(log.find("holds 3 committed rounds but its watermark"), std::string::npos) << log;
  EXPECT_NE(log.find("--accept-rollback"), std::string::npos) << log;
  EXPECT_EQ(log.find("round alg="), std::string::npos) << "a round ran on the rolled-back state:\n" << log;

  // The state file emptied.
  { std::ofstream(db, std::ios::trunc); }
  co = StartCoordinator(cfg, port, {}, "empty.log");
  EXPECT_EQ(Wait(co, 60000), 2) << ReadFile(dir_ / "empty.log");
  log = ReadFile(dir_ / "empty.log");
  EXPECT_NE(log.find("holds 0 committed rounds but its watermark"), std::string::npos) << log;

  // An older backup restored whole: only the devices know better.
  for (const fs::path& f : {db, mark}) fs::copy_file(dir_ / "backup" / f.filename(), f, fs::copy_options::overwrite_existing);
  co = StartCoordinator(cfg, port, {}, "backup.log");
  EXPECT_EQ(Wait(co, 60000), 1) << ReadFile(dir_ / "backup.log");
  log = ReadFile(dir_ / "backup.log");
  EXPECT_NE(log.find("reports a pending update for alg=fedavg run=0 round=1"), std::string::npos) << log;
  EXPECT_NE(log.find("holds that run's rounds up to 3"), std::string::npos) << log;
  EXPECT_EQ(log.find("round alg="), std::string::npos) << "a round ran on the restored state:\n" << log;

  // The operator accepts the rollback: rounds 4 to 40 run again, to the end.
  co = StartCoordinator(cfg, port, {"--accept-rollback"}, "accepted.log");
  EXPECT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "accepted.log");
  EXPECT_EQ(Rounds().size(), 40u);
  EXPECT_EQ(ReadFile(mark), "40 committed_rounds\n");
}

}  // namespace fedrt::net::testing
