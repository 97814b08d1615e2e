#pragma once
// The device driver's connection (device/driver.h): TLS to the coordinator,
// Hello with the pending update, length-prefixed frames in and out, and
// reconnects with exponential backoff (100 ms doubling to 3 s) until
// give_up_ms without one. Each frame goes to the DeviceSession; the test
// hooks (DeviceHooks) see each message before and after it is sent. The
// connection and any buffered frames survive between pump() calls, so a
// caller can take part one round at a time. When Welcome asks for heartbeats,
// a Heartbeat goes out after that long without sending anything (checked
// between messages and at least every 200 ms while pump() runs; not during
// local work, which the coordinator does not count as idle). Before each new connection the
// credential files are looked at again: changed ones (`keys rotate`, the new
// files copied over the old) are read and used from then on. Host code.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/device/driver.h"
#include "fedrt/device/log.h"
#include "fedrt/device/session.h"
#include "fedrt/tls/tls.h"
#include "fedrt/wire/frame.h"

namespace fedrt::net {

// How pump() ended when it returned Ok.
enum class PumpEnd { kShutdown, kRound, kCancelled };

class DeviceConnection {
 public:
  DeviceConnection(const DeviceOptions& options, const DeviceLog& log, DeviceSession& session);
  Status init();  // reads the TLS credentials
  // Moves messages until the coordinator's Shutdown, until a round of this
  // device settled (when `until_round`), or until `cancel` is set (checked
  // between messages and at least every 200 ms). An error: a refusal, or
  // give_up_ms without a connection.
  Status pump(bool until_round, const std::atomic<bool>& cancel, PumpEnd* end);
  void close() { tls_->close(); }

 private:
  Status send(const wire::Envelope& env);
  Status connect(const std::atomic<bool>& cancel, bool* cancelled);
  // Counts a refusal of this device's credentials (kPermissionDenied); an error after kMaxCredentialRefusals in a row.
  Status count_refusal(const Status& st);
  // Handles the buffered complete frames; stops early on a settled round (until_round) or a stop.
  Status drain(bool until_round, DeviceStop& stop, bool* round);
  void wait(long ms, const std::atomic<bool>& cancel);
  // The credential files' modification times and sizes, as one string.
  std::string credentials_stamp() const;
  // A new TLS client from the credential files if they changed since they were read.
  void reload_credentials();
  // Sends a Heartbeat if Welcome asked for them and nothing was sent for that long.
  Status heartbeat();

  const DeviceOptions& opt_;
  const DeviceLog& log_;
  DeviceSession& session_;
  std::unique_ptr<TlsClient> tls_ = std::make_unique<TlsClient>();
  std::string creds_stamp_;
  wire::FrameDecoder dec_;
  DeviceSession::Sender sender_;
  long backoff_ = 100;
  size_t address_ = 0;  // which of opt_.host:port and opt_.fallbacks the next connection tries
  int refusals_ = 0;  // handshakes in a row whose credentials the coordinator refused
  static constexpr int kMaxCredentialRefusals = 5;  // then the device stops with the reason
  std::chrono::steady_clock::time_point last_ok_;
  uint32_t heartbeat_ms_ = 0;  // Welcome.heartbeat_ms of this connection (0: none)
  std::chrono::steady_clock::time_point last_sent_;
  std::vector<uint8_t> buf_;
};

}  // namespace fedrt::net
