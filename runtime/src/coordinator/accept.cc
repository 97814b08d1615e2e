// The coordinator's accept path (coordinator/coordinator.h): the open-file
// limit, then what Admission (coordinator/admission.h) decides about each new
// connection (an accepted socket, or a session beginning on a serial line,
// coordinator/serial_line.h) and each registered device's silence, carried
// out on their transports; TCP keepalive on admitted sockets. Refusals go
// through the bounded refusal log (coordinator/refusal_log.h).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// Keepalive probes after `idle_s` without traffic, then every 10 s (at most idle_s), 3 unanswered
// ones close the connection: a peer whose host vanished without a FIN is dropped.
void SetKeepalive(asio::ip::tcp::socket& sock, long idle_s) {
  if (idle_s <= 0) return;
  const int fd = sock.native_handle(), on = 1, idle = static_cast<int>(idle_s);
  const int interval = static_cast<int>(std::min(10L, idle_s)), count = 3;
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

double Seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
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
  const auto& n = opt_.network;
  auto rate = PeerRateLimit::Make(static_cast<double>(n.peer_connections_per_s),
                                  static_cast<double>(n.peer_connection_burst), n.rate_limit_exempt);
  admission_ = Admission(static_cast<size_t>(want > 0 ? std::min(want, room) : room),
                         static_cast<size_t>(n.max_handshakes),
                         rate.ok() ? std::move(*rate) : PeerRateLimit());  // (validated with the config: cannot fail here)
  CoordinatorLog("limits open_files={} max_connections={} max_handshakes={} peer_connections_per_s={} "
                 "peer_connection_burst={} rate_limit_exempt={} tcp_keepalive_s={} idle_timeout_ms={} "
                 "max_output_bytes={} device_messages_per_s={} device_message_burst={}",
                 files, admission_.max_connections(), admission_.max_handshakes(), n.peer_connections_per_s,
                 n.peer_connection_burst, fmt::join(n.rate_limit_exempt, ","), n.tcp_keepalive_s, n.idle_timeout_ms,
                 n.max_output_bytes, n.device_messages_per_s, n.device_message_burst);
}

// Looks for idle devices every quarter of the timeout (the devices' heartbeat interval), so a
// silent one is dropped between 1 and 1.25 timeouts after it was last heard from.
void Coordinator::watch_idle() {
  if (opt_.network.idle_timeout_ms <= 0) return;
  idle_timer_.expires_after(std::chrono::milliseconds(heartbeat_ms()));
  idle_timer_.async_wait([this](const std::error_code& ec) {
    if (ec || finished_) return;
    drop_idle();
    watch_idle();
  });
}

// A registered device that asked for heartbeats and has sent nothing for idle_timeout_ms is
// closed. The clock does not run while it answers the task (it may be loading its data) or
// owes the open round (its local work blocks its connection), and it restarts from then.
void Coordinator::drop_idle() {
  const uint64_t now = now_ms();
  for (uint32_t agent = 0; agent < heartbeats_.size(); ++agent) {
    if (!heartbeats_[agent]) continue;
    Connection* c = registry_.connection(agent);
    if (c == nullptr) continue;
    const bool waiting = registry_.state(agent) != Registry::State::kReady || rounds_.owes(agent);
    if (!Admission::Idle(now, heard_ms_[agent], opt_.network.idle_timeout_ms, waiting)) continue;
    // on_closed logs "disconnected device=... reason=idle: ..." and shows it in the devices table.
    c->close(fmt::format("idle: nothing received for {:.1f} s", static_cast<double>(now - heard_ms_[agent]) / 1000.0));
  }
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

// An accepted socket: keepalive, then admitted like any other transport.
void Coordinator::admit(asio::ip::tcp::socket sock) {
  std::error_code pec;
  const auto peer = sock.remote_endpoint(pec);
  const asio::ip::address address = peer.address();
  SetKeepalive(sock, opt_.network.tcp_keepalive_s);
  admit(std::make_unique<TcpTransport>(std::move(sock)), pec ? nullptr : &address);
}

// What Admission says of a new connection, carried out: closed at once, or
// admitted (after dropping the oldest handshake in progress).
void Coordinator::admit(std::unique_ptr<Transport> t, const asio::ip::address* peer) {
  switch (admission_.admit(peer, Seconds(std::chrono::steady_clock::now()), conns_.size(), handshaking_.size())) {
    case Admission::Verdict::kPeerRate: {
      monitor_->handshake_failed("limit_peer_rate");
      refused("limit/peer_rate",
              "refused peer={} stage=accept reason=limit: more than {} new connections per second from this address "
              "(network.peer_connections_per_s, burst {})",
              t->peer(), opt_.network.peer_connections_per_s, opt_.network.peer_connection_burst);
      t->close();
      return;
    }
    case Admission::Verdict::kConnections: {
      monitor_->handshake_failed("limit_connections");
      refused("limit/connections", "refused peer={} stage=accept reason=limit: {} connections open (network.max_connections)",
              t->peer(), conns_.size());
      t->close();
      return;
    }
    case Admission::Verdict::kAdmitDroppingOldest: {
      Connection* oldest = handshaking_.begin()->second;
      monitor_->handshake_failed("limit_handshakes");
      refused("limit/handshakes",
              "dropped peer={} stage=handshake reason=limit: {} handshakes in progress (network.max_handshakes), the "
              "oldest makes room",
              oldest->peer(), handshaking_.size());
      oldest->close("handshakes at the cap");  // on_closed forgets it
      break;
    }
    case Admission::Verdict::kAdmit: break;
  }
  auto c = std::make_shared<Connection>(this, std::move(t), next_serial_++);
  c->set_limits({static_cast<size_t>(opt_.network.max_output_bytes),
                 static_cast<double>(opt_.network.device_messages_per_s),
                 static_cast<double>(opt_.network.device_message_burst)});
  Status st = c->start(tls_.conf());
  if (!st.ok()) {
    refused("setup", "refused peer={} stage=setup reason={}", c->peer(), st.message());
    return;
  }
  conns_.emplace(c.get(), c);
  handshaking_.emplace(c->serial(), c.get());
  c->pump();
}

// network.serial: each line is opened now (an error stops the start, naming
// the line) and served once the run starts (run(): SerialLine::start).
Status Coordinator::open_lines() {
  for (const std::string& value : opt_.network.serial) {
    auto spec = ParseSerialLine(value);  // (validated with the config)
    if (!spec.ok()) return spec.status();
    auto line = std::make_shared<SerialLine>(this, *spec, [this](std::unique_ptr<Transport> t) {
      if (finished_) return t->close();
      admit(std::move(t), nullptr);
    });
    FEDRT_TRY(line->open());
    lines_.push_back(std::move(line));
  }
  return Status::Ok();
}

}  // namespace fedrt::net::detail
