// Acceptance (issue 45, the HTTP endpoint's bounds; docs/dashboard.md,
// "Security"): endless header lines are cut at 16 KiB with the coordinator's
// memory flat; 200 clients that never finish their request do not keep a
// normal request from its answer; /PATH?token=T redirects only to a path of
// this server; a token file others can read is refused, naming the fix.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <vector>

#include "fedrt/ops/http_endpoint.h"
#include "http_harness.h"

namespace fedrt::net::testing {
namespace http_bounds_test {

class HttpBoundsTest : public HttpTest {};

// The attack: two connections without a token send header lines without end (the
// endpoint went from 17 MB to 618 MB). Each is answered 431 at 16 KiB and closed; the
// coordinator's peak memory stays within 64 MB of its start, and it serves on.
TEST_F(HttpBoundsTest, EndlessHeaderLinesAreCutAndMemoryStaysFlat) {
  Start("0.0.0.0:0");
  const long base_kb = StatusKb(co_, "VmRSS");
  const std::string line = "X-Flood: " + std::string(8000, 'b') + "\r\n";
  std::string lines;
  for (int i = 0; i < 64; ++i) lines += line;  // 512 KB a send
  long sent = 0;
  for (int c = 0; c < 2; ++c) {
    const int fd = Connect(http_, SO_SNDTIMEO, 2);
    ASSERT_GE(fd, 0);
    const std::string start = "GET /api/run HTTP/1.1\r\nHost: x\r\n";
    (void)::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    for (int i = 0; i < 600; ++i) {  // up to 300 MB
      const ssize_t n = ::send(fd, lines.data(), lines.size(), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += n;
    }
    ::close(fd);
  }
  const long peak_kb = StatusKb(co_, "VmHWM");
  std::printf("header flood: %ld kB of header lines sent on 2 connections; coordinator RSS %ld kB at start, peak "
              "%ld kB\n",
              sent / 1024, base_kb, peak_kb);
  EXPECT_LT(peak_kb - base_kb, 64 * 1024);
  EXPECT_LT(sent, 2L * 600 * static_cast<long>(lines.size())) << "the endpoint read every header line";
  const Reply big = Get(http_, "/api/run", line + line + line);  // 24 KB of fields
  EXPECT_EQ(big.status, 431) << big.head;
  EXPECT_EQ(Get(http_, "/api/run", "Authorization: Bearer " + token() + "\r\n").status, 200);
}

// 200 connections that start a request and never finish it (the endpoint's 4 threads all
// waited on them): a normal request is still answered at once. (Each slow one is answered
// 408 and closed 5 s after it connected.)
TEST_F(HttpBoundsTest, SlowClientsDoNotKeepOthersWaiting) {
  Start("127.0.0.1:0");
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    const int fd = Connect(http_, SO_SNDTIMEO, 2);
    ASSERT_GE(fd, 0);
    const std::string part = "GET /api/run HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    ASSERT_GT(::send(fd, part.data(), part.size(), MSG_NOSIGNAL), 0);
    slow.push_back(fd);
  }
  const Reply r = Get(http_, "/api/run");  // gives up after 10 s
  EXPECT_EQ(r.status, 200) << "a normal request waited behind 200 slow ones";
  for (int fd : slow) ::close(fd);
}

// /PATH?token=T sets the cookie and sends the browser on to PATH, only when PATH is this
// server's: "//host/x" (a browser reads another host) and "/\host/x" go to "/".
TEST_F(HttpBoundsTest, TheTokenRedirectStaysOnSite) {
  Start("0.0.0.0:0");
  const Reply own = Get(http_, "/api/run?token=" + token());
  EXPECT_EQ(own.status, 303);
  EXPECT_NE(own.head.find("Location: /api/run\r"), std::string::npos) << own.head;
  for (const char* target : {"//evil.example/x", "/%2Fevil.example/x", "/\\evil.example/x", "/%5Cevil.example"}) {
    const Reply r = Get(http_, std::string(target) + "?token=" + token());
    EXPECT_EQ(r.status, 303) << target;
    EXPECT_NE(r.head.find("Location: /\r"), std::string::npos) << target << ": " << r.head;
  }
}

// A token file that others can read is refused with its name and the fix; at 0600 it loads.
TEST(HttpToken, AFileOthersCanReadIsRefused) {
  const fs::path dir = fs::path(FEDRT_NET_TMP) / "HttpToken.AFileOthersCanReadIsRefused";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "http.token";
  std::ofstream(file) << std::string(64, 'a') << "\n";
  ::chmod(file.c_str(), 0644);
  auto open = LoadOrCreateHttpToken(dir.string());
  ASSERT_FALSE(open.ok());
  const std::string why = open.status().message();
  EXPECT_NE(why.find(file.string()), std::string::npos) << why;
  EXPECT_NE(why.find("chmod 600"), std::string::npos) << why;
  ::chmod(file.c_str(), 0600);
  auto own = LoadOrCreateHttpToken(dir.string());
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(*own, std::string(64, 'a'));
}

}  // namespace http_bounds_test
}  // namespace fedrt::net::testing
