// The [network] table's checks and the key files' hex decoding.
#include <unistd.h>

#include <fstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "fedrt/coordinator/network_config.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net {
namespace {

// Loads "[network]\n" + body: the error message ("" when it loads) and the config.
// ctest runs each test in its own process, several at once: the file is per process.
std::pair<std::string, NetworkConfig> load(const std::string& body) {
  const std::string path = ::testing::TempDir() + "/network_config_test_" + std::to_string(::getpid()) + ".toml";
  std::ofstream(path) << "[network]\n" << body;
  NetworkConfig c;
  Status st = LoadNetworkToml(path, c);
  return {st.ok() ? std::string() : std::string(st.message()), c};
}

TEST(NetworkConfig, HexAndValidation) {
  bool ok = false;
  EXPECT_EQ(HexToBytes("00ff10", &ok), (std::vector<uint8_t>{0, 255, 16}));
  EXPECT_TRUE(ok);
  HexToBytes("0g", &ok);
  EXPECT_FALSE(ok);
  NetworkConfig n;
  EXPECT_TRUE(ValidateNetwork(n).ok());
  n.quorum = 0;
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("quorum"), std::string::npos);
  n.quorum = 1;
  n.auth = "none";
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.auth"), std::string::npos);
  n.auth = "any";
  n.refusal_log_lines = -1;
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.refusal_log_lines"), std::string::npos);
  n.refusal_log_lines = 0;  // summaries only
  EXPECT_TRUE(ValidateNetwork(n).ok());
  n.refusal_log_interval_ms = 0;
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.refusal_log_interval_ms"), std::string::npos);
}

// A listen address that is not an IP address is refused at validation, with
// its key and flag (it used to end the coordinator with an uncaught
// std::system_error when the socket was opened).
TEST(NetworkConfig, ListenMustBeAnAddress) {
  NetworkConfig n;
  for (const char* ok : {"127.0.0.1", "0.0.0.0", "::1", "::"}) {
    n.listen = ok;
    EXPECT_TRUE(ValidateNetwork(n).ok()) << ok;
  }
  n.listen = "127.0.0.1:0";
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.listen (--listen) must be an IPv4 or IPv6 address, "
                                                           "got '127.0.0.1:0' (the port is network.port, --port)"),
            std::string::npos)
      << ValidateNetwork(n).message();
  n.listen = "localhost";
  EXPECT_FALSE(ValidateNetwork(n).ok());
}

// The per-peer limits and keepalive: defaults exempt loopback; bad values name their key.
TEST(NetworkConfig, PeerLimitsFromToml) {
  NetworkConfig n;
  EXPECT_EQ(n.rate_limit_exempt, (std::vector<std::string>{"127.0.0.0/8", "::1"}));
  auto [err, c] = load("peer_connections_per_s = 5\npeer_connection_burst = 9\n"
                       "rate_limit_exempt = [\"10.0.0.0/8\"]\ntcp_keepalive_s = 0\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.peer_connections_per_s, 5);
  EXPECT_EQ(c.peer_connection_burst, 9);
  EXPECT_EQ(c.rate_limit_exempt, (std::vector<std::string>{"10.0.0.0/8"}));
  EXPECT_EQ(c.tcp_keepalive_s, 0);
  EXPECT_EQ(load("rate_limit_exempt = []\n").second.rate_limit_exempt.size(), 0u);  // nothing exempt
  EXPECT_NE(load("rate_limit_exempt = \"10.0.0.0/8\"\n").first.find("'network.rate_limit_exempt' must be an array"),
            std::string::npos);
  EXPECT_NE(load("rate_limit_exempt = [1]\n").first.find("an array of strings"), std::string::npos);
  EXPECT_NE(load("rate_limit_exempt = [\"10.0.0.0/40\"]\n").first.find("network.rate_limit_exempt: '10.0.0.0/40'"),
            std::string::npos);
  EXPECT_NE(load("peer_connections_per_s = -1\n").first.find("network.peer_connections_per_s"), std::string::npos);
  EXPECT_NE(load("peer_connection_burst = 0\n").first.find("network.peer_connection_burst"), std::string::npos);
  EXPECT_NE(load("tcp_keepalive_s = -5\n").first.find("network.tcp_keepalive_s"), std::string::npos);
}

TEST(NetworkConfig, PskForwardSecrecyFromToml) {
  EXPECT_TRUE(NetworkConfig{}.psk_forward_secrecy);  // PSK with X25519 unless the operator says otherwise
  auto [err, c] = load("psk_forward_secrecy = false\n");
  EXPECT_EQ(err, "");
  EXPECT_FALSE(c.psk_forward_secrecy);
  EXPECT_NE(load("psk_forward_secrecy = 1\n").first.find("'network.psk_forward_secrecy' must be true or false"),
            std::string::npos);
}

// TLS 1.3 only by default; "1.2" takes TLS 1.2 peers too; anything else names the key.
TEST(NetworkConfig, TlsMinVersionFromToml) {
  EXPECT_EQ(NetworkConfig{}.tls_min_version, "1.3");
  auto [err, c] = load("tls_min_version = \"1.2\"\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.tls_min_version, "1.2");
  EXPECT_NE(load("tls_min_version = \"1.1\"\n")
                .first.find("network.tls_min_version must be \"1.2\" or \"1.3\", got '1.1'"),
            std::string::npos);
  EXPECT_NE(load("tls_min_version = 1.3\n").first.find("'network.tls_min_version' must be a string"), std::string::npos);
}

// The idle timeout: on by default, 0 turns it off, and it is at least a second.
TEST(NetworkConfig, IdleTimeoutFromToml) {
  EXPECT_EQ(NetworkConfig{}.idle_timeout_ms, 60000);
  EXPECT_EQ(load("idle_timeout_ms = 0\n").second.idle_timeout_ms, 0);
  auto [err, c] = load("idle_timeout_ms = 1500\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.idle_timeout_ms, 1500);
  EXPECT_NE(load("idle_timeout_ms = 999\n").first.find("network.idle_timeout_ms must be 0 (off) or in 1000..86400000"),
            std::string::npos);
  EXPECT_NE(load("idle_timeout_ms = \"60s\"\n").first.find("'network.idle_timeout_ms' must be an integer"),
            std::string::npos);
}

// The bounds per connection (docs/security.md): defaults, 0 turns each off, and a bad value names its key.
TEST(NetworkConfig, ConnectionBoundsFromToml) {
  EXPECT_EQ(NetworkConfig{}.max_output_bytes, 8L << 20);
  EXPECT_EQ(NetworkConfig{}.device_messages_per_s, 50);
  EXPECT_EQ(NetworkConfig{}.device_message_burst, 500);
  auto [err, c] = load("max_output_bytes = 0\ndevice_messages_per_s = 0\ndevice_message_burst = 7\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.max_output_bytes, 0);
  EXPECT_EQ(c.device_messages_per_s, 0);
  EXPECT_EQ(c.device_message_burst, 7);
  EXPECT_NE(load("max_output_bytes = 4096\n").first.find("network.max_output_bytes must be 0 (no cap) or at least 65536"),
            std::string::npos);
  EXPECT_NE(load("device_messages_per_s = -1\n").first.find("network.device_messages_per_s must be >= 0"),
            std::string::npos);
  EXPECT_NE(load("device_message_burst = 0\n").first.find("network.device_message_burst must be at least 1"),
            std::string::npos);
}

// A misspelled key names the key meant; a word far from every key does not.
TEST(NetworkConfig, SerialLinesFromToml) {
  auto [err, c] = load("serial = [\"/dev/ttyACM0,115200\", \"/dev/ttyUSB0\"]\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.serial, (std::vector<std::string>{"/dev/ttyACM0,115200", "/dev/ttyUSB0"}));
  EXPECT_NE(load("serial = [\"/dev/ttyACM0,115201\"]\n").first.find("network.serial (--serial) '/dev/ttyACM0,115201': the baud rate"),
            std::string::npos);
  EXPECT_NE(load("serial = [\"/dev/ttyACM0\", \"/dev/ttyACM0,9600\"]\n").first.find("names /dev/ttyACM0 twice"),
            std::string::npos);
  EXPECT_NE(load("serial = \"/dev/ttyACM0\"\n").first.find("'network.serial' must be an array"), std::string::npos);
}

TEST(NetworkConfig, MisspelledKeySuggestsTheKeyMeant) {
  EXPECT_NE(load("deadline_sm = 100\n").first.find("unknown key 'network.deadline_sm' (line 2); did you mean "
                                                   "'network.deadline_ms'?"),
            std::string::npos);
  const std::string far = load("colour = 1\n").first;
  EXPECT_NE(far.find("unknown key 'network.colour'"), std::string::npos) << far;
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
}

}  // namespace
}  // namespace fedrt::net
