// A device that cannot run the coordinator's task says why in TaskReply
// (too little memory for the task's vectors, data files it was not given):
// the coordinator logs the refusal with the reason, leaves that agent out of
// every round, and runs the experiment with the others; the device exits
// with an error naming the reason.
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

TEST_F(NetTest, DeviceWithTooLittleMemoryRefusesTheTaskAndTheRunGoesOn) {
  const int n = 4, T = 3;
  const auto cfg = WriteExperiment(
      "[problem]\nkind = \"lsq\"\nagents = 4\ndim = 5\n[algorithm]\nnames = [\"scaffold\"]\nstep = 0.05\n"
      "local_steps = 10\n[run]\nrounds = 3\nseed = 3\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n");
  Provision(dir_ / "keys", n);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < n - 1; ++i) StartDevice(i, port);
  const pid_t small = StartDevice(n - 1, port, {"--capacity", "64"});  // bytes: less than d = 5 needs
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Wait(small, 10000), 1) << "refused: a run failure (docs/cli.md, \"Exit codes\")";
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("refused device=dev0003 index=3 stage=task reason=the task's vectors do not fit this device's "
                     "memory"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("start devices=3 of 4 refused=1"), std::string::npos) << log;
  const std::string dlog = ReadFile(dir_ / "dev0003.log");
  EXPECT_NE(dlog.find("cannot take the coordinator's task: the task's vectors do not fit this device's memory"),
            std::string::npos)
      << dlog;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), static_cast<size_t>(T));
  for (const auto& r : rounds) {
    EXPECT_EQ(r.sampled, 3u);
    EXPECT_EQ(r.agents, 3u);
  }
}

TEST_F(NetTest, DeviceWithoutTheTasksDataFilesRefusesIt) {
  const fs::path data = fs::path(FEDRT_TEST_DATA) / "fedopt" / "tiny";  // agent0.csv, agent1.csv
  const auto cfg = WriteExperiment("[problem]\nkind = \"lsq\"\ndata = \"" + data.string() +
                                   "\"\n[algorithm]\nnames = [\"fedavg\"]\nstep = 0.05\nlocal_steps = 2\n[run]\n"
                                   "rounds = 2\nseed = 3\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n");
  Provision(dir_ / "keys", 2);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  StartDevice(0, port, {"--data", data.string()});
  const pid_t bare = StartDevice(1, port);
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Wait(bare, 10000), 1) << "refused: a run failure (docs/cli.md, \"Exit codes\")";
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("refused device=dev0001 index=1 stage=task reason=the task's problem is read from files: start "
                     "the device with --data"),
            std::string::npos)
      << log;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 2u);
  for (const auto& r : rounds) EXPECT_EQ(r.agents, 1u);  // device 0 trained on its files
}

}  // namespace
}  // namespace fedrt::net::testing
