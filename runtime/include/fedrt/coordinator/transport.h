#pragma once
// Transport: the bytes under one coordinator Connection's TLS session
// (coordinator/connection.h). Either a TCP socket (TcpTransport, below) or
// one session on a serial line (coordinator/serial_line.h): the connection,
// its TLS server session, admission and limits are the same code on both.
// Non-blocking, driven by the event loop's readiness notifications; send and
// recv answer in mbedTLS's bio codes, which the connection passes on. Host code.

#include <cstddef>
#include <functional>
#include <string>
#include <system_error>

#include <asio.hpp>

namespace fedrt::net {

class Transport {
 public:
  using WaitHandler = std::function<void(const std::error_code&)>;
  virtual ~Transport() = default;

  // Writes up to len bytes: how many (> 0), MBEDTLS_ERR_SSL_WANT_WRITE, or
  // MBEDTLS_ERR_NET_SEND_FAILED.
  virtual int send(const unsigned char* buf, size_t len) = 0;
  // Reads up to len bytes: how many (> 0), MBEDTLS_ERR_SSL_WANT_READ,
  // MBEDTLS_ERR_NET_CONN_RESET (the peer ended the session: end_reason() says
  // how) or MBEDTLS_ERR_NET_RECV_FAILED.
  virtual int recv(unsigned char* buf, size_t len) = 0;
  // Calls `done` once (on the event loop) when bytes can be read (write =
  // false) or written; with an error when the wait was cancelled by close().
  virtual void wait(bool write, WaitHandler done) = 0;
  // Ends this session's use of the bytes (a socket is closed; a serial line
  // goes back to waiting for the next session). Cancels pending waits.
  virtual void close() = 0;
  // How the peer ended the session when recv said MBEDTLS_ERR_NET_CONN_RESET.
  virtual std::string end_reason() const { return "closed by peer"; }
  // Who is at the other end, for the logs: "ADDRESS:PORT" or "serial:PATH".
  const std::string& peer() const { return peer_; }

 protected:
  std::string peer_ = "?";
};

// A TCP connection accepted by the coordinator: non-blocking, TCP_NODELAY
// (small frames answered by small frames: Nagle's algorithm would hold each
// for the peer's delayed acknowledgement, about 40 ms on Linux).
class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(asio::ip::tcp::socket sock);
  int send(const unsigned char* buf, size_t len) override;
  int recv(unsigned char* buf, size_t len) override;
  void wait(bool write, WaitHandler done) override;
  void close() override;

 private:
  asio::ip::tcp::socket sock_;
};

}  // namespace fedrt::net
