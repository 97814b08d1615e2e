#pragma once
// The [network] table of an experiment file (coordinator, devices, fleet):
//
//   [network]
//   listen = "127.0.0.1"   # coordinator's listen address
//   port = 7433            # TCP port (0 = any free port, reported in --port-file)
//   keys = "keys"          # provisioning directory of ./fedrt keys
//   state = "coordinator.db"  # SQLite state of the coordinator
//   auth = "any"           # any | psk | cert
//   psk_forward_secrecy = true  # PSK with an ephemeral X25519 exchange (TLS 1.3 psk_dhe_ke, 1.2 ECDHE-PSK
//                          # first): a leaked PSK opens no recorded session; about 2 ms of coordinator CPU
//                          # per PSK handshake instead of 0.3
//   tls_min_version = "1.3"  # "1.3": TLS 1.3 only; "1.2": peers that speak only TLS 1.2 connect too
//                          # (docs/security.md, "TLS")
//   deadline_ms = 30000    # a round closes at its deadline if the quorum reported
//   quorum = 0.5           # fraction of the sampled devices needed at the deadline
//   start_timeout_ms = 60000  # wait this long for every device before round 0
//   http = ""              # dashboard, JSON and /metrics on PORT or ADDRESS:PORT ("": off; docs/dashboard.md)
//   http_linger_s = 0      # keep serving the finished run's dashboard this many seconds (Ctrl-C ends it)
//   refusal_log_lines = 10           # refusals logged in full per reason and interval, the rest
//   refusal_log_interval_ms = 10000  # counted into one summary line per interval (coordinator/refusal_log.h)
//   max_connections = 0    # open connections at most (0: the open-file limit less 64)
//   max_handshakes = 1024  # handshakes in progress at most; at the cap the oldest is dropped
//   peer_connections_per_s = 20  # new connections per second per peer address (IPv6: per /64; 0: no limit)
//   peer_connection_burst = 200  # ... of which this many at once (coordinator/peer_rate_limit.h)
//   rate_limit_exempt = ["127.0.0.0/8", "::1"]  # addresses or networks never rate-limited
//   tcp_keepalive_s = 60   # TCP keepalive probes after this long without traffic (0: off), every 10 s;
//                          # 3 unanswered: a device whose host vanished is dropped after about 90 s
//   idle_timeout_ms = 60000  # a registered device that heartbeats (fedrt-device) and sends nothing for this
//                          # long while it owes no open round is dropped (0: off); it heartbeats every quarter
//   max_output_bytes = 8388608  # a frame queued behind more unsent bytes than this closes the connection
//                          # (a device that does not read); streamed broadcasts queue one chunk at a time
//   device_messages_per_s = 50  # per connection: heartbeats, repeated task replies and rejected messages
//   device_message_burst = 500  # ... (burst this many); beyond, dropped and the connection not read (0: no limit)
//   serial = []            # serial lines with one microcontroller each, "PATH[,BAUD]" (BAUD 115200 unless
//                          # given; a pseudo-terminal ignores it): the same TLS sessions as on TCP
//                          # (coordinator/serial_line.h; docs/microcontrollers.md, "A board on a serial line")

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/config/experiment.h"

namespace fedrt::net {

struct NetworkConfig {
  std::string listen = "127.0.0.1";
  long port = 7433;
  std::string keys = "keys";
  std::string state = "coordinator.db";
  std::string auth = "any";
  bool psk_forward_secrecy = true;
  std::string tls_min_version = "1.3";
  long deadline_ms = 30000;
  double quorum = 0.5;
  long start_timeout_ms = 60000;
  std::string http;  // "" (off), "PORT" (127.0.0.1) or "ADDRESS:PORT"
  long http_linger_s = 0;  // keep serving the finished run's dashboard this long (0: stop with the run)
  long refusal_log_lines = 10;
  long refusal_log_interval_ms = 10000;
  long max_connections = 0;
  long max_handshakes = 1024;
  long peer_connections_per_s = 20;
  long peer_connection_burst = 200;
  std::vector<std::string> rate_limit_exempt = {"127.0.0.0/8", "::1"};
  long tcp_keepalive_s = 60;
  long idle_timeout_ms = 60000;
  long max_output_bytes = 8L << 20;
  long device_messages_per_s = 50;
  long device_message_burst = 500;
  std::vector<std::string> serial;  // "PATH[,BAUD]", one microcontroller per line
};

// Reads [network] of `path` (absent keys keep their value; unknown keys are
// errors naming the key; relative paths are resolved against the file's directory).
Status LoadNetworkToml(const std::string& path, NetworkConfig& net);
Status ValidateNetwork(const NetworkConfig& net);

// One rate_limit_exempt entry, "ADDRESS" or "ADDRESS/PREFIX" (IPv4 or IPv6):
// its address bytes (4 or 16 of them) and prefix length; errors name the entry.
struct ExemptNetwork {
  std::array<uint8_t, 16> bytes{};
  size_t size = 4;
  unsigned prefix = 32;
};
Result<ExemptNetwork> ParseExemptNetwork(const std::string& entry);

// Hash of everything that determines the agents' local problems (kind,
// Garnet settings, problem seed, file, noise-free): devices and coordinator
// must agree on it.
uint64_t ProblemFingerprint(const config::ExperimentConfig& cfg);

}  // namespace fedrt::net
