#pragma once
// The HTTP endpoint's tests' helpers (tests/net/http_test.cc,
// tests/net/http_bounds_test.cc): raw requests on fresh connections, and a
// coordinator waiting for its devices with its endpoint on.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <string>

#include "net_harness.h"

namespace fedrt::net::testing {

inline constexpr const char* kWaiting = R"(
[problem]
kind = "garnet"
agents = 2
[algorithm]
names = ["fedlsa"]
local_steps = 10
[run]
rounds = 2
[network]
start_timeout_ms = 600000
)";

struct Reply {
  int status = 0;  // 0: the connection closed without a status line
  std::string head, body;
};

// A connection to 127.0.0.1:port whose receives (SO_RCVTIMEO) or sends (SO_SNDTIMEO) give up
// after `timeout_s`; -1 if it cannot connect.
inline int Connect(int port, int option, long timeout_s) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One request on a fresh connection, exactly the bytes given.
inline Reply Raw(int port, const std::string& request) {
  Reply r;
  const int fd = Connect(port, SO_RCVTIMEO, 10);
  if (fd < 0) return r;
  size_t off = 0;
  while (off < request.size()) {
    const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early on an oversized request
    off += static_cast<size_t>(n);
  }
  std::string all;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t sp = all.find(' ');
  if (all.compare(0, 5, "HTTP/") == 0 && sp != std::string::npos) r.status = std::stoi(all.substr(sp + 1, 3));
  const size_t end = all.find("\r\n\r\n");
  r.head = all.substr(0, end);
  r.body = end == std::string::npos ? "" : all.substr(end + 4);
  return r;
}

inline Reply Get(int port, const std::string& target, const std::string& headers = "") {
  return Raw(port, "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + "\r\n");
}

class HttpTest : public NetTest {
 protected:
  // A coordinator waiting for its devices, its endpoint on `http` (port 0).
  void Start(const std::string& http) {
    Provision(dir_ / "keys", 2);
    co_ = StartCoordinator(WriteExperiment(kWaiting), 0, {"--http", http});
    ASSERT_GT(WaitPort(), 0) << ReadFile(dir_ / "coordinator.log");
    ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "dashboard url=", 10000)) << ReadFile(dir_ / "coordinator.log");
    const std::string log = ReadFile(dir_ / "coordinator.log");
    const size_t at = log.find("dashboard url=http://");
    const size_t colon = log.find(':', log.find("//", at) + 2);
    http_ = std::stoi(log.substr(colon + 1));
    ASSERT_GT(http_, 0);
  }
  std::string token() {
    std::string t = ReadFile(dir_ / "keys" / "http.token");
    while (!t.empty() && t.back() == '\n') t.pop_back();
    return t;
  }
  // Bytes the endpoint must never serve: a PSK, a private key, the token.
  void ExpectNoSecret(const Reply& r, const std::string& what) {
    const std::string registry = ReadFile(dir_ / "keys" / "registry.tsv");
    const std::string psk = registry.substr(registry.rfind('\t') + 1, 64);
    EXPECT_EQ(r.body.find(psk), std::string::npos) << what;
    EXPECT_EQ(r.body.find("PRIVATE KEY"), std::string::npos) << what;
    if (!token().empty()) {
      EXPECT_EQ(r.body.find(token()), std::string::npos) << what;
    }
    EXPECT_EQ(r.body.find("root:"), std::string::npos) << what;
  }
  pid_t co_ = -1;
  int http_ = 0;
};

}  // namespace fedrt::net::testing
