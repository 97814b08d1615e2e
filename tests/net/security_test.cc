// Acceptance (security): a wrong PSK, an unknown PSK identity, an untrusted
// certificate, a plaintext connection and a device presenting another
// device's identity are refused during the handshake or registration, logged
// with the reason, and can never submit an update; the coordinator keeps
// serving legitimate devices.
#include <arpa/inet.h>

#include <chrono>
#include <fstream>

#include "fedrt/tls/tls.h"
#include "fedrt/wire/frame.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

class SecurityTest : public NetTest {
 protected:
  void SetUp() override {
    NetTest::SetUp();
    cfg_ = WriteExperiment(TinyExperiment());
    Provision(dir_ / "keys", 2);
    Provision(dir_ / "other", 2);  // another fleet: another CA
    co_ = StartCoordinator(cfg_, 0, {});
    port_ = WaitPort();
    ASSERT_GT(port_, 0);
  }
  std::string log() { return ReadFile(dir_ / "coordinator.log"); }
  fs::path dev(const std::string& fleet, int i, const char* f) { return dir_ / fleet / "devices" / Id(i) / f; }

  // Sends hello as `claimed`, then an update; returns what came back (errors) and whether an Ack ever arrived.
  void HelloThenUpdate(TlsClient& c, const std::string& claimed, std::string* reasons, bool* acked) {
    wire::Envelope h;
    h.mutable_hello()->set_protocol_version(wire::kProtocolVersion);
    h.mutable_hello()->set_device_id(claimed);
    wire::Envelope u;
    u.mutable_update()->add_payload(std::string(64, '\0'));
    (void)c.write_all(wire::EncodeFrame(h));
    (void)c.write_all(wire::EncodeFrame(u));
    wire::FrameDecoder dec;
    uint8_t buf[4096];
    *acked = false;
    for (int i = 0; i < 30 && c.connected(); ++i) {  // <= 3 s
      auto n = c.read_some(buf, sizeof buf);
      if (!n.ok()) break;
      dec.feed(buf, *n);
      std::string body;
      wire::WireError err;
      while (dec.next(body, err) == 1) {
        wire::Envelope env;
        if (!wire::ParseEnvelope(body, env, err)) continue;
        if (env.has_error()) *reasons += std::string(wire::ErrorReasonName(env.error().reason())) + ";";
        if (env.has_ack()) *acked = true;
      }
    }
  }

  fs::path cfg_;
  pid_t co_ = -1;
  int port_ = 0;
};

TEST_F(SecurityTest, WrongPskIsRefusedInHandshake) {
  const fs::path bad = dir_ / "wrong.psk";
  std::ofstream(bad) << "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
  TlsClient c;
  ASSERT_TRUE(c.init({Id(0), bad.string(), "", "", ""}).ok());
  EXPECT_FALSE(c.connect("127.0.0.1", static_cast<uint16_t>(port_), 3000).ok());
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "stage=handshake reason=", 5000));
  EXPECT_NE(log().find("wrong pre-shared key"), std::string::npos) << log();
  EXPECT_EQ(log().find("registered device="), std::string::npos);
}

// The device program with a wrong key: it says what the refusal means and
// stops after a few handshakes instead of retrying for --give-up-ms.
TEST_F(SecurityTest, ADeviceWithAWrongKeySaysWhyAndStops) {
  const fs::path bad = dir_ / "wrong.psk";
  std::ofstream(bad) << "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t d = Spawn({Bin("fedrt-device"), "--coordinator", "127.0.0.1:" + std::to_string(port_), "--id", Id(0),
                         "--key", bad.string(), "--give-up-ms", "60000"},
                        dir_ / "wrong_key.log");
  const int rc = Wait(d, 30000);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(rc, 1) << "refused: a run failure, not a usage error (docs/cli.md, \"Exit codes\")";
  EXPECT_LT(s, 20.0) << "the device retried for its 60 s give-up time";
  const std::string out = ReadFile(dir_ / "wrong_key.log");
  EXPECT_NE(out.find("handshakes in a row refused"), std::string::npos) << out;
  EXPECT_NE(out.find("check --id and --key against the fleet's keys folder"), std::string::npos) << out;
}

TEST_F(SecurityTest, UnknownPskIdentityIsRefusedInHandshake) {
  TlsClient c;
  ASSERT_TRUE(c.init({"intruder", dev("keys", 0, "device.psk").string(), "", "", ""}).ok());
  EXPECT_FALSE(c.connect("127.0.0.1", static_cast<uint16_t>(port_), 3000).ok());
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "PSK identity 'intruder' is not provisioned", 5000)) << log();
}

TEST_F(SecurityTest, UntrustedCertificateIsRefusedInHandshake) {
  TlsClient c;
  // Certificate and key from another fleet's CA; trusts our coordinator's CA.
  ASSERT_TRUE(c.init({Id(0), "", dev("keys", 0, "ca.crt").string(), dev("other", 0, "device.crt").string(),
                      dev("other", 0, "device.key").string()})
                  .ok());
  // TLS 1.3: the client's handshake ends before the coordinator has checked its certificate,
  // so the refusal comes at the first read, as refused credentials.
  if (c.connect("127.0.0.1", static_cast<uint16_t>(port_), 3000).ok()) {
    uint8_t buf[256];
    Status refused;
    for (int i = 0; i < 50 && refused.ok(); ++i) {
      auto n = c.read_some(buf, sizeof buf);
      if (!n.ok()) refused = n.status();
    }
    EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused.message();
  }
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "stage=handshake reason=", 5000));
  EXPECT_NE(log().find("not signed by the fleet CA"), std::string::npos) << log();
  EXPECT_EQ(log().find("registered device="), std::string::npos);
}

TEST_F(SecurityTest, PlaintextConnectionIsRefused) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  wire::Envelope h;
  h.mutable_hello()->set_protocol_version(wire::kProtocolVersion);
  h.mutable_hello()->set_device_id(Id(0));
  const std::string f = wire::EncodeFrame(h);
  ASSERT_EQ(::send(fd, f.data(), f.size(), MSG_NOSIGNAL), static_cast<ssize_t>(f.size()));
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "stage=handshake reason=", 5000)) << log();
  EXPECT_NE(log().find("plaintext or corrupt record"), std::string::npos) << log();
  // The coordinator closed the connection: reads end (EOF or reset) without any frame.
  char buf[256];
  ssize_t n;
  size_t total = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) total += static_cast<size_t>(n);
  ::close(fd);
  EXPECT_LT(total, 64u);  // at most a TLS alert record, never a fedrt frame
  EXPECT_EQ(log().find("registered device="), std::string::npos);
}

TEST_F(SecurityTest, AnotherDevicesIdentityIsRefusedWithPsk) {
  TlsClient c;  // authenticates as dev0001 (its own PSK) but claims to be dev0000
  ASSERT_TRUE(c.init({Id(1), dev("keys", 1, "device.psk").string(), "", "", ""}).ok());
  ASSERT_TRUE(c.connect("127.0.0.1", static_cast<uint16_t>(port_), 100).ok());
  std::string reasons;
  bool acked = true;
  HelloThenUpdate(c, Id(0), &reasons, &acked);
  EXPECT_EQ(reasons, "identity;");
  EXPECT_FALSE(acked);
  EXPECT_NE(log().find("reason=identity: device id 'dev0000' does not match the TLS identity 'dev0001'"),
            std::string::npos)
      << log();
  EXPECT_EQ(log().find("registered device="), std::string::npos);
}

TEST_F(SecurityTest, AnotherDevicesIdentityIsRefusedWithCertificate) {
  TlsClient c;  // dev0001's certificate, claims dev0000
  ASSERT_TRUE(c.init({Id(1), "", dev("keys", 1, "ca.crt").string(), dev("keys", 1, "device.crt").string(),
                      dev("keys", 1, "device.key").string()})
                  .ok());
  ASSERT_TRUE(c.connect("127.0.0.1", static_cast<uint16_t>(port_), 100).ok());
  std::string reasons;
  bool acked = true;
  HelloThenUpdate(c, Id(0), &reasons, &acked);
  EXPECT_EQ(reasons, "identity;");
  EXPECT_FALSE(acked);
  EXPECT_NE(log().find("does not match the TLS identity 'dev0001'"), std::string::npos) << log();
}

TEST_F(SecurityTest, LegitimateDevicesStillServedAfterAttacks) {
  {
    TlsClient c;
    ASSERT_TRUE(c.init({Id(1), dev("keys", 1, "device.psk").string(), "", "", ""}).ok());
    ASSERT_TRUE(c.connect("127.0.0.1", static_cast<uint16_t>(port_), 100).ok());
    std::string reasons;
    bool acked = true;
    HelloThenUpdate(c, Id(0), &reasons, &acked);
    EXPECT_FALSE(acked);
  }
  StartDevice(0, port_);
  StartDevice(1, port_);
  ASSERT_EQ(Wait(co_, 60000), 0) << log();
  EXPECT_NE(log().find("round alg=scafflsa run=0 round=1 agents=2/2"), std::string::npos) << log();
}

}  // namespace
}  // namespace fedrt::net::testing
