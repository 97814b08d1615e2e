#pragma once
// Connection: one device's TLS session on the coordinator, driven by the
// readiness notifications of the event loop (non-blocking mbedTLS over a
// Transport: a TCP socket or a session on a serial line,
// coordinator/transport.h): handshake with a timeout, length-prefixed frames
// in and out, orderly close. It knows nothing of rounds: frames go to its
// owner. Host code.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <asio.hpp>
#include <mbedtls/ssl.h>

#include "fedrt/core/status.h"
#include "fedrt/coordinator/peer_rate_limit.h"
#include "fedrt/coordinator/transport.h"
#include "fedrt/tls/key_exchange.h"
#include "fedrt/tls/tls.h"
#include "fedrt/wire/frame.h"

namespace fedrt::net {

class Connection;

// What a connection reports to the coordinator.
class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;
  virtual void on_handshake_done(Connection& c) = 0;
  virtual void on_handshake_failed(Connection& c, int rc) = 0;
  virtual void on_frame(Connection& c, const std::string& body) = 0;
  virtual void on_closed(Connection& c, const std::string& why) = 0;
  virtual TlsServerConfig& tls() = 0;
  virtual asio::io_context& io() = 0;
  // Counts a refusal of `key` ("timeout/handshake", ...); true when its line is to be logged (coordinator/refusal_log.h).
  virtual bool log_refusal(std::string_view key) = 0;
  // Bytes this connection's socket took in and gave out (TLS records, the
  // handshake's included); the coordinator sums them per round.
  virtual void traffic(size_t /*in*/, size_t /*out*/) {}
};

// What one connection may take from the coordinator (docs/security.md,
// "Bounds per connection"; the [network] keys of the same names).
struct ConnectionLimits {
  size_t max_output_bytes = 0;  // unsent bytes a new frame may queue behind (0: no cap)
  double messages_per_s = 0;    // charged messages per second (0: no limit) ...
  double message_burst = 1;     // ... of which this many at once
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class State { kHandshake, kAwaitHello, kRegistered, kClosed };
  static constexpr int kHandshakeTimeoutMs = 10000;

  Connection(ConnectionOwner* owner, std::unique_ptr<Transport> transport, uint64_t serial);
  ~Connection() { mbedtls_ssl_free(&ssl_); }

  void set_limits(const ConnectionLimits& limits) { limits_ = limits; }
  Status start(const mbedtls_ssl_config* conf);
  void pump();
  // Charges one message that carries no round data (a heartbeat, a task reply
  // again, a rejected message) to the connection's budget. False when the
  // budget is spent: the caller drops the message, and the connection reads
  // nothing more until a token is back (the device's own TCP stalls, the
  // coordinator spends nothing on it); `flooded()` counts those.
  bool charge();
  uint64_t flooded() const { return flooded_; }
  void send(const wire::Envelope& env);
  // A stream of frames made one at a time as the previous ones are written
  // (a chunked broadcast: one chunk per connection in memory). The source
  // fills the next envelope, or returns false when the stream is over. A new
  // stream replaces the one in progress.
  using Source = std::function<bool(wire::Envelope& next)>;
  void stream(Source source);
  // Sends an Error; with then_close the connection closes once it is written.
  void send_error(wire::ErrorReason reason, const std::string& message, bool then_close);
  void close(const std::string& why);

  State state() const { return state_; }
  void set_registered(int agent);
  const mbedtls_ssl_context* ssl() const { return &ssl_; }
  const std::string& peer() const { return peer_; }
  // How the peer ended the session when its transport said so ("closed by peer", ...).
  std::string end_reason() const { return transport_->end_reason(); }
  const std::string& identity() const { return identity_; }
  // The negotiated TLS version and (EC)DHE group, "TLSv1.3/X25519" ("" before the handshake).
  const std::string& tls_session() const { return tls_session_; }
  int agent() const { return agent_; }  // agent index once registered, else -1
  uint64_t serial() const { return serial_; }

 private:
  static int BioSend(void* ctx, const unsigned char* buf, size_t len);
  static int BioRecv(void* ctx, unsigned char* buf, size_t len);
  void wait_read();
  void wait_write();
  bool flush();  // false when the connection failed
  void resume();  // after a pause of charge()

  ConnectionOwner* owner_;
  std::unique_ptr<Transport> transport_;
  asio::steady_timer hs_timer_;
  asio::steady_timer pause_timer_;
  uint64_t serial_;
  mbedtls_ssl_context ssl_;
  wire::FrameDecoder dec_;
  std::string out_;
  size_t out_off_ = 0;
  Source source_;
  State state_ = State::kHandshake;
  std::string peer_;
  std::string identity_;
  ServerFlight flight_;  // the handshake's plaintext bytes out, for tls_session_
  std::string tls_session_;
  int agent_ = -1;
  bool reading_ = false, writing_ = false, close_after_flush_ = false, paused_ = false;
  ConnectionLimits limits_;
  TokenBucket budget_;
  uint64_t flooded_ = 0;
  std::string close_reason_;
};

}  // namespace fedrt::net
