// SerialLine (coordinator/serial_line.h) on a real pseudo-terminal: where
// sessions start in a line's bytes (garbage before a ClientHello, a new
// ClientHello once a session's handshake is over, a failed session's record
// scanned again), the reset record, and the PATH[,BAUD] values.
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "fedrt/coordinator/serial_line.h"

namespace fedrt::net {
namespace {

// A ClientHello record of `body` bytes (>= 45), as its first bytes look on the wire.
std::vector<uint8_t> Hello(size_t body = 60, uint8_t fill = 0x5a) {
  std::vector<uint8_t> r = {0x16, 0x03, 0x01, uint8_t(body >> 8), uint8_t(body), 0x01, 0x00,
                            uint8_t((body - 4) >> 8), uint8_t(body - 4), 0x03, 0x03};
  r.resize(5 + body, fill);
  return r;
}

std::vector<uint8_t> AppRecord(size_t body, uint8_t fill = 0x77) {
  std::vector<uint8_t> r = {0x17, 0x03, 0x03, uint8_t(body >> 8), uint8_t(body)};
  r.resize(5 + body, fill);
  return r;
}

std::vector<uint8_t> Garbage(size_t n) {  // every byte value, 0x16 included
  std::vector<uint8_t> g(n);
  uint32_t x = 99;
  for (auto& b : g) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 16);
  return g;
}

class Owner : public ConnectionOwner {
 public:
  void on_handshake_done(Connection&) override {}
  void on_handshake_failed(Connection&, int) override {}
  void on_frame(Connection&, const std::string&) override {}
  void on_closed(Connection&, const std::string&) override {}
  TlsServerConfig& tls() override { return tls_; }
  asio::io_context& io() override { return io_; }
  bool log_refusal(std::string_view key) override {
    refusals_.emplace_back(key);
    return true;
  }
  asio::io_context io_;
  std::vector<std::string> refusals_;
  TlsServerConfig tls_;
};

class SerialLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK);
    ASSERT_GE(master_, 0);
    ASSERT_EQ(::grantpt(master_), 0);
    ASSERT_EQ(::unlockpt(master_), 0);
    path_ = ::ptsname(master_);
    auto spec = ParseSerialLine(path_ + ",115200");
    ASSERT_TRUE(spec.ok());
    line_ = std::make_shared<SerialLine>(&owner_, *spec, [this](std::unique_ptr<Transport> t) {
      sessions_.push_back(std::move(t));
    });
    ASSERT_TRUE(line_->open().ok());
  }
  void TearDown() override {
    sessions_.clear();
    line_.reset();
    ::close(master_);
  }
  void Write(const std::vector<uint8_t>& b) { ASSERT_EQ(::write(master_, b.data(), b.size()), ssize_t(b.size())); }
  // What the coordinator wrote onto the line.
  std::vector<uint8_t> ReadMaster() {
    std::vector<uint8_t> out(256);
    pollfd p{master_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) return {};
    const ssize_t n = ::read(master_, out.data(), out.size());
    out.resize(n > 0 ? size_t(n) : 0);
    return out;
  }
  void RunUntil(size_t sessions) {
    for (int i = 0; i < 200 && sessions_.size() < sessions; ++i) {
      owner_.io_.restart();
      owner_.io_.run_for(std::chrono::milliseconds(10));
    }
  }
  // Reads exactly n bytes of the session (as mbedTLS does: a header, then a body).
  std::vector<uint8_t> Recv(Transport& t, size_t n) {
    std::vector<uint8_t> out(n);
    size_t got = 0;
    for (int i = 0; i < 200 && got < n; ++i) {
      const int r = t.recv(out.data() + got, n - got);
      if (r > 0) got += size_t(r);
      else if (r != MBEDTLS_ERR_SSL_WANT_READ) break;
      else ::usleep(2000);
    }
    out.resize(got);
    return out;
  }

  Owner owner_;
  int master_ = -1;
  std::string path_;
  std::shared_ptr<SerialLine> line_;
  std::vector<std::unique_ptr<Transport>> sessions_;
};

TEST(SerialLineSpec, ParsesPathAndBaudAndNamesWhatIsWrong) {
  auto a = ParseSerialLine("/dev/ttyACM0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, "/dev/ttyACM0");
  EXPECT_EQ(a->baud, 115200u);
  auto b = ParseSerialLine("/dev/ttyUSB1,921600");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->baud, 921600u);
  auto c = ParseSerialLine("/dev/ttyUSB1,12345");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("baud rate '12345'"), std::string::npos);
  EXPECT_NE(std::string(c.status().message()).find("115200"), std::string::npos);
  EXPECT_FALSE(ParseSerialLine(",9600").ok());
  EXPECT_FALSE(ParseSerialLine("/dev/ttyS0,fast").ok());
}

TEST(SerialLineScan, FindsAClientHelloAfterGarbageAndOnlyThere) {
  const auto hello = Hello();
  EXPECT_EQ(serial::StartsClientHello(hello.data(), hello.size()), 1);
  EXPECT_EQ(serial::StartsClientHello(hello.data(), 4), -1);  // could still be one
  const auto app = AppRecord(40);
  EXPECT_EQ(serial::StartsClientHello(app.data(), app.size()), 0);
  auto split = Hello();
  split[8] = 2;  // a handshake message shorter than its record: not how a ClientHello is sent
  EXPECT_EQ(serial::StartsClientHello(split.data(), split.size()), 0);
  std::vector<uint8_t> line = Garbage(100000);
  ASSERT_EQ(serial::FindClientHello(line.data(), line.size() - 10), line.size() - 10) << "garbage taken for a hello";
  line.insert(line.end(), hello.begin(), hello.end());
  EXPECT_EQ(serial::FindClientHello(line.data(), line.size()), 100000u);
}

TEST_F(SerialLineTest, GarbageThenASessionThenTheDeviceStartsANewOne) {
  line_->start();
  EXPECT_EQ(ReadMaster(), std::vector<uint8_t>(std::begin(serial::kResetRecord), std::end(serial::kResetRecord)))
      << "the line's opening ends any session the device held";
  const auto junk = Garbage(3000), hello = Hello(), app = AppRecord(30);
  Write(junk);
  Write(hello);
  RunUntil(1);
  ASSERT_EQ(sessions_.size(), 1u);
  Transport& s1 = *sessions_[0];
  EXPECT_EQ(s1.peer(), "serial:" + path_);
  EXPECT_EQ(Recv(s1, hello.size()), hello);
  Write(app);
  EXPECT_EQ(Recv(s1, app.size()), app);
  const unsigned char reply[] = {0x17, 0x03, 0x03, 0x00, 0x01, 0x42};
  EXPECT_EQ(s1.send(reply, sizeof reply), int(sizeof reply));
  EXPECT_EQ(ReadMaster().size(), sizeof reply);
  // The device restarted: its ClientHello ends the session, nothing more reaches it.
  const auto hello2 = Hello(80, 0x33);
  Write(hello2);
  unsigned char buf[64];
  int r = MBEDTLS_ERR_SSL_WANT_READ;
  for (int i = 0; i < 100 && r == MBEDTLS_ERR_SSL_WANT_READ; ++i, ::usleep(2000)) r = s1.recv(buf, 5);
  EXPECT_EQ(r, MBEDTLS_ERR_NET_CONN_RESET);
  EXPECT_NE(s1.end_reason().find("new session"), std::string::npos) << s1.end_reason();
  EXPECT_EQ(s1.send(reply, sizeof reply), int(sizeof reply));  // taken and dropped
  EXPECT_TRUE(ReadMaster().empty());
  s1.close();
  RunUntil(2);
  ASSERT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(Recv(*sessions_[1], hello2.size()), hello2);
  EXPECT_EQ(line_->discarded_bytes(), junk.size());
}

TEST_F(SerialLineTest, ARestartMidHandshakeEndsItWithoutAnotherByte) {
  line_->start();
  (void)ReadMaster();
  const auto hello = Hello(), hello2 = Hello(70, 0x44);
  Write(hello);
  RunUntil(1);
  ASSERT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(Recv(*sessions_[0], hello.size()), hello);
  const unsigned char server_hello[] = {0x16, 0x03, 0x03, 0x00, 0x01, 0x02};
  EXPECT_EQ(sessions_[0]->send(server_hello, sizeof server_hello), int(sizeof server_hello));
  (void)ReadMaster();
  Write(hello2);  // the device started over before the handshake ended
  unsigned char buf[8];
  int r = MBEDTLS_ERR_SSL_WANT_READ;
  for (int i = 0; i < 100 && r == MBEDTLS_ERR_SSL_WANT_READ; ++i, ::usleep(2000)) r = sessions_[0]->recv(buf, 5);
  EXPECT_EQ(r, MBEDTLS_ERR_NET_CONN_RESET);
  const unsigned char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x14};  // what mbedTLS would say now
  EXPECT_EQ(sessions_[0]->send(alert, sizeof alert), int(sizeof alert));
  EXPECT_TRUE(ReadMaster().empty()) << "a byte of the old session reached the new handshake";
  sessions_[0]->close();
  RunUntil(2);
  ASSERT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(Recv(*sessions_[1], hello2.size()), hello2);
  // A session that ends on its first record does not begin on that hello again.
  sessions_[1]->close();
  owner_.io_.restart();
  owner_.io_.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(line_->discarded_bytes(), 0u) << "scanned again, not counted as garbage";
}

TEST_F(SerialLineTest, AHelloRetryRequestGetsItsSecondClientHello) {
  line_->start();
  (void)ReadMaster();
  const auto hello = Hello(), hello2 = Hello(90, 0x21), hello3 = Hello(50, 0x22);
  Write(hello);
  RunUntil(1);
  ASSERT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(Recv(*sessions_[0], hello.size()), hello);
  std::vector<uint8_t> hrr = {0x16, 0x03, 0x03, 0x00, 0x2a, 0x02, 0x00, 0x00, 0x26, 0x03, 0x03,
                              0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c,
                              0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb,
                              0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};
  ASSERT_TRUE(serial::IsHelloRetryRequest(hrr.data(), hrr.size()));
  EXPECT_EQ(sessions_[0]->send(hrr.data(), hrr.size()), int(hrr.size()));
  Write(hello2);
  EXPECT_EQ(Recv(*sessions_[0], hello2.size()), hello2) << "the answer to the HelloRetryRequest";
  Write(hello3);  // but only that one
  unsigned char buf[8];
  int r = MBEDTLS_ERR_SSL_WANT_READ;
  for (int i = 0; i < 100 && r == MBEDTLS_ERR_SSL_WANT_READ; ++i, ::usleep(2000)) r = sessions_[0]->recv(buf, 5);
  EXPECT_EQ(r, MBEDTLS_ERR_NET_CONN_RESET);
}

TEST_F(SerialLineTest, TheRecordASessionFailedOnIsScannedAgain) {
  line_->start();
  (void)ReadMaster();
  const auto hello = Hello(), hello2 = Hello(120, 0x66);
  Write(hello);
  RunUntil(1);
  ASSERT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(Recv(*sessions_[0], hello.size()), hello);
  // The device rebooted in the middle of a record: its ClientHello fills the
  // rest of that record, whose MAC then fails.
  auto cut = AppRecord(100);
  cut.resize(25);
  Write(cut);
  Write(hello2);
  EXPECT_EQ(Recv(*sessions_[0], 105).size(), 105u);
  sessions_[0]->close();
  RunUntil(2);
  ASSERT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(Recv(*sessions_[1], hello2.size()), hello2);
  EXPECT_EQ(line_->discarded_bytes(), 0u);
}

TEST_F(SerialLineTest, ARecordThatStopsMidWayEndsTheSession) {
  line_->start();
  (void)ReadMaster();
  const auto hello = Hello();
  Write(hello);
  RunUntil(1);
  ASSERT_EQ(sessions_.size(), 1u);
  Transport& s1 = *sessions_[0];
  EXPECT_EQ(Recv(s1, hello.size()), hello);
  auto cut = AppRecord(1000);  // a length the device never sends (a bit flipped on the line)
  cut.resize(40);
  Write(cut);
  EXPECT_EQ(Recv(s1, 40).size(), 40u);
  unsigned char buf[64];
  EXPECT_EQ(s1.recv(buf, sizeof buf), MBEDTLS_ERR_SSL_WANT_READ);
  bool woken = false;
  std::error_code woke_with = asio::error::operation_aborted;
  s1.wait(false, [&](const std::error_code& ec) {
    woken = true;
    woke_with = ec;
  });
  for (int i = 0; i < 300 && !woken; ++i) {
    owner_.io_.restart();
    owner_.io_.run_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(woken) << "the session was not woken after " << SerialLine::kRecordStallMs << " ms";
  EXPECT_FALSE(woke_with);
  EXPECT_EQ(s1.recv(buf, sizeof buf), MBEDTLS_ERR_NET_CONN_RESET);
  EXPECT_NE(s1.end_reason().find("stopped 965 bytes short"), std::string::npos) << s1.end_reason();
}

TEST_F(SerialLineTest, BytesIntoTheVoidAreAnsweredWithOneResetRecord) {
  line_->start();
  (void)ReadMaster();
  Write(AppRecord(40));  // a device that still thinks it has a session
  owner_.io_.restart();
  owner_.io_.run_for(std::chrono::milliseconds(SerialLine::kResetQuietMs + 100));
  // Within kResetIntervalMs of the opening's reset: the next comes at the interval.
  owner_.io_.restart();
  owner_.io_.run_for(std::chrono::milliseconds(SerialLine::kResetIntervalMs));
  EXPECT_EQ(ReadMaster(), std::vector<uint8_t>(std::begin(serial::kResetRecord), std::end(serial::kResetRecord)));
  EXPECT_TRUE(sessions_.empty());
  EXPECT_EQ(line_->discarded_bytes(), 45u);
}

TEST_F(SerialLineTest, AFloodOfGarbageIsDiscardedAsReadAndLoggedOnce) {
  line_->start();
  (void)ReadMaster();
  const auto junk = Garbage(200000);
  size_t off = 0;
  for (int i = 0; i < 2000 && off < junk.size(); ++i) {  // the pty holds a few KB: write as the line reads
    const ssize_t n = ::write(master_, junk.data() + off, std::min<size_t>(4096, junk.size() - off));
    if (n > 0) off += size_t(n);
    owner_.io_.restart();
    owner_.io_.run_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(off, junk.size());
  for (int i = 0; i < 100 && line_->discarded_bytes() < junk.size(); ++i) {
    owner_.io_.restart();
    owner_.io_.run_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(line_->discarded_bytes() + serial::kHelloPrefix, junk.size());  // a possible start's tail may wait
  EXPECT_TRUE(sessions_.empty());
  EXPECT_EQ(std::count(owner_.refusals_.begin(), owner_.refusals_.end(), "serial/garbage"), 1);
  // And the line still finds the next session.
  const auto hello = Hello();
  Write(hello);
  RunUntil(1);
  ASSERT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(Recv(*sessions_[0], hello.size()), hello);
}

}  // namespace
}  // namespace fedrt::net
