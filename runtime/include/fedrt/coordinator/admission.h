#pragma once
// Admission: who gets a connection and who keeps one, as decisions without
// I/O beside the rounds (docs/dashboard.md, "Connection limits"). The
// coordinator's accept path (runtime/src/coordinator/accept.cc) asks it
// about each new TCP connection and each registered device's silence, and
// carries out the answer on the sockets.
//   - over its address's rate (coordinator/peer_rate_limit.h): refused;
//   - at max_connections: refused;
//   - at max_handshakes: admitted, and the oldest handshake in progress is
//     dropped for it, so that idle half-open connections cannot keep honest
//     devices out;
//   - a registered device that asked for heartbeats and sent nothing for
//     idle_timeout_ms is idle (the clock restarts while it answers the task
//     or owes the open round). Host code.

#include <cstddef>
#include <cstdint>
#include <utility>

#include <asio/ip/address.hpp>

#include "fedrt/coordinator/peer_rate_limit.h"

namespace fedrt::net {

class Admission {
 public:
  enum class Verdict : uint8_t {
    kAdmit = 0,
    kAdmitDroppingOldest,  // at max_handshakes: the oldest handshake makes room
    kPeerRate,             // refused: its address is over network.peer_connections_per_s
    kConnections,          // refused: network.max_connections are open
  };

  Admission() = default;
  Admission(size_t max_connections, size_t max_handshakes, PeerRateLimit rate)
      : max_connections_(max_connections), max_handshakes_(max_handshakes), rate_(std::move(rate)) {}

  // A new connection from `peer` (nullptr: its address is unknown) at `now_s`
  // (a monotonic clock), with `connections` open, `handshakes` of them in
  // their TLS handshake.
  Verdict admit(const asio::ip::address* peer, double now_s, size_t connections, size_t handshakes) {
    if (peer != nullptr && !rate_.admit(*peer, now_s)) return Verdict::kPeerRate;
    if (connections >= max_connections_) return Verdict::kConnections;
    if (handshakes > 0 && handshakes >= max_handshakes_) return Verdict::kAdmitDroppingOldest;
    return Verdict::kAdmit;
  }

  // Whether a registered device last heard from at `heard_ms` is idle at
  // `now_ms` (timeout_ms <= 0: never). `waiting`: it answers the task or owes
  // the open round, which restarts its clock.
  static bool Idle(uint64_t now_ms, uint64_t& heard_ms, long timeout_ms, bool waiting) {
    if (timeout_ms <= 0) return false;
    if (waiting) {
      heard_ms = now_ms;
      return false;
    }
    return now_ms - heard_ms > static_cast<uint64_t>(timeout_ms);
  }

  size_t max_connections() const { return max_connections_; }
  size_t max_handshakes() const { return max_handshakes_; }

 private:
  size_t max_connections_ = 0;
  size_t max_handshakes_ = 0;
  PeerRateLimit rate_;
};

}  // namespace fedrt::net
