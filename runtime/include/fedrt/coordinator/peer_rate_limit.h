#pragma once
// Per-peer-address limit on new connections (docs/dashboard.md, "Connection
// limits"): a token bucket per address (IPv6: per /64, the block one host
// usually holds), refilled at `rate` connections per second up to `burst`.
// A connection from an address whose bucket is empty is refused before its
// TLS handshake. Addresses in the exempt networks (loopback by default, so
// a fleet simulated on one machine starts at full speed) are never limited.
//
//   tokens(t) = min(burst, tokens(t0) + rate * (t - t0)); admit iff tokens >= 1, then tokens -= 1
//
// The table of buckets is bounded: full buckets (peers quiet for burst/rate
// seconds) are forgotten first; beyond kMaxPeers the table starts over,
// which lets through at most one burst per address rather than grow.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <asio/ip/address.hpp>

#include "fedrt/core/status.h"
#include "fedrt/coordinator/network_config.h"

namespace fedrt::net {

// One token bucket of `burst` tokens refilled at `rate` per second (the
// formula above); also each connection's message budget (coordinator/connection.h).
struct TokenBucket {
  double tokens = 0, at = 0;
  // Refills up to `now_s`, then takes one token: false (nothing taken) when less than one is left.
  bool take(double rate, double burst, double now_s);
};

class PeerRateLimit {
 public:
  static constexpr size_t kMaxPeers = 65536;

  // rate <= 0: no limit. `exempt`: addresses or networks ("127.0.0.0/8", "::1", "10.1.2.3";
  // coordinator/network_config.h ParseExemptNetwork).
  static Result<PeerRateLimit> Make(double rate, double burst, const std::vector<std::string>& exempt);
  PeerRateLimit() = default;

  // One new connection from `peer` at `now_s` (a monotonic clock in seconds).
  bool admit(const asio::ip::address& peer, double now_s);
  bool exempt(const asio::ip::address& peer) const;
  size_t tracked() const { return buckets_.size(); }
  uint64_t refused() const { return refused_; }

 private:
  using Bucket = TokenBucket;
  static std::string KeyOf(const asio::ip::address& a);
  void forget_full(double now_s);

  double rate_ = 0, burst_ = 1;
  std::vector<ExemptNetwork> exempt_;
  std::unordered_map<std::string, Bucket> buckets_;
  uint64_t refused_ = 0;
};

}  // namespace fedrt::net
