#include "fedrt/coordinator/transport.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

#include <fmt/format.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

namespace fedrt::net {

TcpTransport::TcpTransport(asio::ip::tcp::socket sock) : sock_(std::move(sock)) {
  std::error_code ec;
  const auto ep = sock_.remote_endpoint(ec);
  if (!ec) peer_ = fmt::format("{}:{}", ep.address().to_string(), ep.port());
  sock_.non_blocking(true, ec);
  sock_.set_option(asio::ip::tcp::no_delay(true), ec);
}

int TcpTransport::send(const unsigned char* buf, size_t len) {
  const ssize_t n = ::send(sock_.native_handle(), buf, len, MSG_NOSIGNAL);
  if (n >= 0) return static_cast<int>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
  return MBEDTLS_ERR_NET_SEND_FAILED;
}

int TcpTransport::recv(unsigned char* buf, size_t len) {
  const ssize_t n = ::recv(sock_.native_handle(), buf, len, 0);
  if (n > 0) return static_cast<int>(n);
  if (n == 0) return MBEDTLS_ERR_NET_CONN_RESET;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_READ;
  return MBEDTLS_ERR_NET_RECV_FAILED;
}

void TcpTransport::wait(bool write, WaitHandler done) {
  sock_.async_wait(write ? asio::ip::tcp::socket::wait_write : asio::ip::tcp::socket::wait_read, std::move(done));
}

void TcpTransport::close() {
  std::error_code ec;
  sock_.close(ec);
}

}  // namespace fedrt::net
