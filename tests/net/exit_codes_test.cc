// One exit-code convention for every program (docs/cli.md, "Exit codes"):
// 2 for a usage error (a flag, a value, the experiment file, a file named on
// the command line), 1 for a run that failed (no listening port, no
// coordinator, an output folder that cannot be made). One case of each for
// fedrt-sim, fedrt-coordinator and fedrt-device.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

constexpr char kExperiment[] =
    "[problem]\nkind = \"lsq\"\nagents = 2\ndim = 3\n[algorithm]\nnames = [\"fedavg\"]\nstep = 0.05\n"
    "local_steps = 2\n[run]\nrounds = 2\nseed = 3\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n";

// A loopback TCP socket bound to a free port; listening or not.
int BoundSocket(bool listen, int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  if (listen && ::listen(fd, 4) != 0) return -1;
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

TEST_F(NetTest, SimExitsWith2ForABadValueAnd1ForARunThatFailed) {
  std::ofstream(dir_ / "a-file") << "not a folder\n";
  pid_t p = Spawn({Bin("fedrt-sim"), "--rounds", "0", "--no-plot", "--out", (dir_ / "out").string()}, dir_ / "usage.log");
  EXPECT_EQ(Wait(p, 60000), 2) << ReadFile(dir_ / "usage.log");
  EXPECT_NE(ReadFile(dir_ / "usage.log").find("fedrt-sim: error: --rounds must be positive, got 0"), std::string::npos);
  p = Spawn({Bin("fedrt-sim"), "--rounds", "1", "--local-steps", "1", "--no-plot", "--out", (dir_ / "a-file/out").string()},
            dir_ / "run.log");
  EXPECT_EQ(Wait(p, 60000), 1) << ReadFile(dir_ / "run.log");
  EXPECT_NE(ReadFile(dir_ / "run.log").find("fedrt-sim: error: cannot create output directory"), std::string::npos)
      << ReadFile(dir_ / "run.log");
}

// A [devices] availability trace with overlapping intervals is in what the
// experiment asked for (docs/async.md): 2, with the file and line.
TEST_F(NetTest, SimExitsWith2ForABadAvailabilityTrace) {
  std::ofstream(dir_ / "trace.csv") << "device,start_s,end_s\n1,0,100\n1,50,150\n";
  std::ofstream(dir_ / "e.toml") << kExperiment << "[devices]\navailability = \"trace.csv\"\n";
  const pid_t p = Spawn({Bin("fedrt-sim"), "--config", (dir_ / "e.toml").string(), "--no-plot", "--out",
                         (dir_ / "out").string()},
                        dir_ / "trace.log");
  EXPECT_EQ(Wait(p, 60000), 2) << ReadFile(dir_ / "trace.log");
  EXPECT_NE(ReadFile(dir_ / "trace.log").find("trace.csv:3: device 1's interval [50, 150) overlaps the one on line 2"),
            std::string::npos)
      << ReadFile(dir_ / "trace.log");
}

TEST_F(NetTest, CoordinatorExitsWith2ForABadExperimentAnd1WhenItCannotListen) {
  Provision(dir_ / "keys", 2);
  const fs::path bad = dir_ / "bad.toml";
  std::string text = kExperiment;
  text.replace(text.find("rounds = 2"), 10, "rounds = 0");
  std::ofstream(bad) << text;
  EXPECT_EQ(Wait(StartCoordinator(bad, 0, {}, "bad.log"), 60000), 2) << ReadFile(dir_ / "bad.log");
  EXPECT_NE(ReadFile(dir_ / "bad.log").find("fedrt-coordinator: error: "), std::string::npos) << ReadFile(dir_ / "bad.log");
  EXPECT_NE(ReadFile(dir_ / "bad.log").find("rounds"), std::string::npos) << ReadFile(dir_ / "bad.log");

  int port = 0;
  const int held = BoundSocket(true, &port);  // another program has the port
  ASSERT_GE(held, 0);
  const auto cfg = WriteExperiment(kExperiment);
  EXPECT_EQ(Wait(StartCoordinator(cfg, port, {}), 60000), 1) << ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(ReadFile(dir_ / "coordinator.log").find("fedrt-coordinator: error: cannot listen on 127.0.0.1:" +
                                                    std::to_string(port)),
            std::string::npos)
      << ReadFile(dir_ / "coordinator.log");
  ::close(held);
}

TEST_F(NetTest, DeviceExitsWith2ForABadFlagAnd1WithoutACoordinator) {
  Provision(dir_ / "keys", 1);
  const std::string key = (dir_ / "keys/devices" / Id(0) / "device.psk").string();
  pid_t p = Spawn({Bin("fedrt-device"), "--coordinator", "127.0.0.1:1", "--id", Id(0), "--key", key, "--give-up-ms", "0"},
                  dir_ / "usage.log");
  EXPECT_EQ(Wait(p, 30000), 2) << ReadFile(dir_ / "usage.log");
  EXPECT_NE(ReadFile(dir_ / "usage.log").find("--give-up-ms must be positive, got 0"), std::string::npos)
      << ReadFile(dir_ / "usage.log");

  int port = 0;
  const int fd = BoundSocket(false, &port);  // bound, not listening: connections are refused
  ASSERT_GE(fd, 0);
  p = Spawn({Bin("fedrt-device"), "--coordinator", "127.0.0.1:" + std::to_string(port), "--id", Id(0), "--key", key,
             "--state", (dir_ / "state").string(), "--give-up-ms", "300"},
            dir_ / "run.log");
  EXPECT_EQ(Wait(p, 30000), 1) << ReadFile(dir_ / "run.log");
  EXPECT_NE(ReadFile(dir_ / "run.log").find("fedrt-device: error: "), std::string::npos) << ReadFile(dir_ / "run.log");
  ::close(fd);
}

}  // namespace
}  // namespace fedrt::net::testing
