// Abuse limits (issue 19): a flood of bad connections is logged at a bounded
// rate (coordinator/refusal_log.h), every refusal accounted for; connections beyond
// network.max_connections are closed at once; at network.max_handshakes the
// oldest handshake in progress makes room, so idle half-open connections do
// not keep honest devices out. The honest devices' round completes.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <unistd.h>

#include <cerrno>
#include <regex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "fedrt/wire/frame.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

// A TCP connection to the coordinator that says nothing (-1 if connect failed),
// from the loopback address `from` (any of 127.0.0.0/8 is this machine).
int IdleConnection(int port, const char* from = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (from != nullptr) {
    sockaddr_in src{};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, from, &src.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  ::close(fd);
  return -1;
}

// Opens a TCP connection, sends a plaintext fedrt frame (no TLS) and closes it.
void PlaintextConnection(int port, const std::string& frame, const char* from = nullptr) {
  const int fd = IdleConnection(port, from);
  if (fd >= 0) (void)::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
  ::close(fd);
}

// True when the coordinator closed `fd` (EOF or reset) within timeout_ms.
bool ClosedByPeer(int fd, int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b[64];
  return ::recv(fd, b, sizeof b, 0) <= 0 && errno != EAGAIN && errno != EWOULDBLOCK;
}

// Refusals the log accounts for: lines matching `full`, plus each `summary`
// line's count=(1) less its logged=(2) (those were full lines already).
long Refusals(const std::string& log, const std::regex& full, const std::regex& summary, long* lines = nullptr,
              long* summaries = nullptr) {
  long n = std::distance(std::sregex_iterator(log.begin(), log.end(), full), std::sregex_iterator());
  if (lines != nullptr) *lines = n;
  long s = 0;
  for (std::sregex_iterator m(log.begin(), log.end(), summary), end; m != end; ++m, ++s)
    n += std::stol((*m)[1].str()) - std::stol((*m)[2].str());
  if (summaries != nullptr) *summaries = s;
  return n;
}

// The kernel's keepalive timer of the coordinator's end of our connection `fd`
// (/proc/net/tcp: timer kind 2 and its expiry in clock ticks), in seconds; -1 if none.
double KeepaliveSeconds(int port, int fd) {
  sockaddr_in me{};
  socklen_t n = sizeof me;
  getsockname(fd, reinterpret_cast<sockaddr*>(&me), &n);
  const std::string local = fmt::format(":{:04X} ", port), remote = fmt::format(":{:04X} ", ntohs(me.sin_port));
  std::istringstream in(ReadFile("/proc/net/tcp"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string sl, loc, rem, st, queues, timer;
    f >> sl >> loc >> rem >> st >> queues >> timer;
    if ((loc + " ").find(local) == std::string::npos || (rem + " ").find(remote) == std::string::npos) continue;
    if (timer.size() < 4 || timer.substr(0, 3) != "02:") return -1;
    return static_cast<double>(std::stoul(timer.substr(3), nullptr, 16)) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return -1;
}

TEST_F(NetTest, FloodOfPlaintextConnectionsIsLoggedAtABoundedRate) {
  constexpr int kFlood = 400;
  const fs::path cfg = WriteExperiment(TinyExperiment("refusal_log_lines = 3\nrefusal_log_interval_ms = 500\n"));
  Provision(dir_ / "keys", 2);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  wire::Envelope h;
  h.mutable_hello()->set_protocol_version(wire::kProtocolVersion);
  h.mutable_hello()->set_device_id(Id(0));
  const std::string frame = wire::EncodeFrame(h);
  for (int i = 0; i < kFlood; ++i) PlaintextConnection(port, frame);
  StartDevice(0, port);
  StartDevice(1, port);
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("round alg=scafflsa run=0 round=1 agents=2/2"), std::string::npos) << log;

  // Every refusal is either a full line or counted in a summary (whose count includes its logged lines).
  const std::regex full(R"(refused peer=\S+ stage=handshake reason=)");
  const std::regex summary(R"(refusals key=handshake/\S+ count=(\d+) logged=(\d+))");
  long lines = 0, summaries = 0;
  const long accounted = Refusals(log, full, summary, &lines, &summaries);
  EXPECT_EQ(accounted, kFlood) << log;
  EXPECT_GE(summaries, 1) << log;
  EXPECT_LT(lines, kFlood / 4) << log;  // 3 per reason and 0.5 s: the flood lasts a few intervals
  EXPECT_LT(log.size(), 40000u);        // one full line per connection would be about 60 kB
}

TEST_F(NetTest, IdleHalfOpenConnectionsMakeRoomForHonestDevices) {
  const fs::path cfg = WriteExperiment(TinyExperiment("max_handshakes = 4\n"));
  Provision(dir_ / "keys", 2);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(IdleConnection(port));
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "reason=limit: 4 handshakes in progress", 5000))
      << ReadFile(dir_ / "coordinator.log");
  EXPECT_TRUE(ClosedByPeer(idle.front(), 5000));  // the oldest went first
  StartDevice(0, port);
  StartDevice(1, port);
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  for (int fd : idle) ::close(fd);
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("round alg=scafflsa run=0 round=1 agents=2/2"), std::string::npos) << log;
  // The devices got in by pushing out idle connections, not by waiting for their 10 s timeout.
  EXPECT_EQ(log.find("reason=timeout"), std::string::npos) << log;
}

TEST_F(NetTest, ConnectionsBeyondTheCapAreClosedAtOnce) {
  const fs::path cfg = WriteExperiment(TinyExperiment("max_connections = 3\n"));
  Provision(dir_ / "keys", 2);
  StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(IdleConnection(port));
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "limits open_files=", 5000));
  const int extra = IdleConnection(port);
  ASSERT_GE(extra, 0);
  EXPECT_TRUE(ClosedByPeer(extra, 5000));
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "stage=accept reason=limit: 3 connections open", 5000))
      << ReadFile(dir_ / "coordinator.log");
  for (int fd : held) EXPECT_FALSE(ClosedByPeer(fd, 200));  // the first three are still being served
  for (int fd : held) ::close(fd);
  ::close(extra);
}

}  // namespace
}  // namespace fedrt::net::testing

namespace fedrt::net::testing {
namespace {

// network.peer_connections_per_s: a flood from one address (127.0.0.2) is cut
// to its burst and rate before any TLS work, every refusal accounted for, while
// devices on an exempt address (127.0.0.1) train; accepted connections carry
// TCP keepalive at network.tcp_keepalive_s.
TEST_F(NetTest, FloodFromOneAddressIsCutToItsRateAndExemptDevicesTrain) {
  constexpr int kFlood = 60;
  const fs::path cfg = WriteExperiment(TinyExperiment(
      "peer_connections_per_s = 2\npeer_connection_burst = 5\nrate_limit_exempt = [\"127.0.0.1\"]\n"
      "tcp_keepalive_s = 30\n"));
  Provision(dir_ / "keys", 2);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0);
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "limits open_files=", 5000));
  const int held = IdleConnection(port);  // exempt: not limited, but its end has keepalive
  ASSERT_GE(held, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double keepalive = KeepaliveSeconds(port, held);
  EXPECT_GT(keepalive, 25.0);
  EXPECT_LE(keepalive, 30.0);
  ::close(held);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kFlood; ++i) PlaintextConnection(port, "not TLS", "127.0.0.2");
  const double flood_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  StartDevice(0, port);
  StartDevice(1, port);
  ASSERT_EQ(Wait(co, 60000), 0) << ReadFile(dir_ / "coordinator.log");
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("round alg=scafflsa run=0 round=1 agents=2/2"), std::string::npos) << log;
  const std::regex full(R"(refused peer=127\.0\.0\.2:\d+ stage=accept reason=limit: more than 2 new connections)");
  const std::regex summary(R"(refusals key=limit/peer_rate count=(\d+) logged=(\d+))");
  const long limited = Refusals(log, full, summary);
  // The burst of 5 plus 2 per second of the flood got through (to be refused as not TLS).
  const long passed = kFlood - limited;
  EXPECT_GE(passed, 5) << log;
  EXPECT_LE(passed, 5 + static_cast<long>(2 * flood_s) + 1) << "flood took " << flood_s << " s\n" << log;
  EXPECT_FALSE(std::regex_search(log, std::regex(R"(refused peer=127\.0\.0\.1:\d+ stage=accept)"))) << log;  // exempt
}

}  // namespace
}  // namespace fedrt::net::testing
