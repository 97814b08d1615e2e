// Who gets a connection (net/coordinator.h): the open-file limit, network.max_connections and
// network.max_handshakes. Refusals go through the bounded refusal log (net/refusal_log.h).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "coordinator_impl.h"

namespace fedrt::net::detail {
namespace {

// Descriptors kept for the state db, the log, the keys folder and the HTTP endpoint.
constexpr long kReservedFiles = 64;

// Raises the soft open-file limit to the hard one where it is lower; returns the soft limit.
long RaiseOpenFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur == RLIM_INFINITY ? (1L << 20) : static_cast<long>(rl.rlim_cur);
}

std::string PeerOf(const asio::ip::tcp::socket& sock) {
  std::error_code ec;
  const auto ep = sock.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

}  // namespace

// max_connections = network.max_connections, at most (open files - reserve); 0: the latter.
void Coordinator::set_limits() {
  const long files = RaiseOpenFileLimit();
  const long room = std::max(1L, files - kReservedFiles);
  const long want = opt_.network.max_connections;
  if (want > room)
    CoordinatorWarn("warning network.max_connections={} exceeds the open-file limit {} less {} reserved: using {}", want,
                    files, kReservedFiles, room);
  max_connections_ = static_cast<size_t>(want > 0 ? std::min(want, room) : room);
  max_handshakes_ = static_cast<size_t>(opt_.network.max_handshakes);
  CoordinatorLog("limits open_files={} max_connections={} max_handshakes={}", files, max_connections_, max_handshakes_);
}

void Coordinator::accept() {
  acceptor_.async_accept([this](const std::error_code& ec, asio::ip::tcp::socket sock) {
    if (finished_) return;
    if (ec == asio::error::operation_aborted) return;
    if (ec) {  // e.g. out of descriptors: retry shortly rather than spin on the error
      refused("accept", "accept error={}", ec.message());
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](const std::error_code& e) {
        if (!e && !finished_ && acceptor_.is_open()) accept();
      });
      return;
    }
    admit(std::move(sock));
    if (acceptor_.is_open()) accept();
  });
}

// At max_connections a new connection is closed at once; at max_handshakes the oldest handshake in
// progress is dropped for it, so idle half-open connections cannot keep honest devices out.
void Coordinator::admit(asio::ip::tcp::socket sock) {
  if (conns_.size() >= max_connections_) {
    monitor_->handshake_failed("limit_connections");
    refused("limit/connections", "refused peer={} stage=accept reason=limit: {} connections open (network.max_connections)",
            PeerOf(sock), conns_.size());
    std::error_code ec;
    sock.close(ec);
    return;
  }
  if (!handshaking_.empty() && handshaking_.size() >= max_handshakes_) {
    Connection* oldest = handshaking_.begin()->second;
    monitor_->handshake_failed("limit_handshakes");
    refused("limit/handshakes",
            "dropped peer={} stage=handshake reason=limit: {} handshakes in progress (network.max_handshakes), the "
            "oldest makes room",
            oldest->peer(), handshaking_.size());
    oldest->close("handshakes at the cap");  // on_closed forgets it
  }
  auto c = std::make_shared<Connection>(this, std::move(sock), next_serial_++);
  Status st = c->start(tls_.conf());
  if (!st.ok()) {
    refused("setup", "refused peer={} stage=setup reason={}", c->peer(), st.message());
    return;
  }
  conns_.emplace(c.get(), c);
  handshaking_.emplace(c->serial(), c.get());
  c->pump();
}

}  // namespace fedrt::net::detail
