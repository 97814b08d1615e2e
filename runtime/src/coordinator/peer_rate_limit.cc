#include "fedrt/coordinator/peer_rate_limit.h"

#include <algorithm>

namespace fedrt::net {
namespace {

// An IPv4 address seen through an IPv6 socket (::ffff:a.b.c.d) as the IPv4 one.
asio::ip::address Plain(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return a;
}

ExemptNetwork BytesOf(const asio::ip::address& a) {
  ExemptNetwork n;
  if (a.is_v4()) {
    const auto b = a.to_v4().to_bytes();
    std::copy(b.begin(), b.end(), n.bytes.begin());
    n.size = 4;
  } else {
    n.bytes = a.to_v6().to_bytes();
    n.size = 16;
  }
  n.prefix = static_cast<unsigned>(n.size * 8);
  return n;
}

// The address is in the network: same family, the network's first `prefix` bits agree.
bool Within(const ExemptNetwork& a, const ExemptNetwork& net) {
  if (a.size != net.size) return false;
  unsigned bits = net.prefix;
  for (size_t i = 0; i < a.size && bits > 0; ++i, bits = bits >= 8 ? bits - 8 : 0) {
    const unsigned mask = bits >= 8 ? 0xffu : (0xffu << (8 - bits)) & 0xffu;
    if ((a.bytes[i] & mask) != (net.bytes[i] & mask)) return false;
  }
  return true;
}

}  // namespace

Result<PeerRateLimit> PeerRateLimit::Make(double rate, double burst, const std::vector<std::string>& exempt) {
  PeerRateLimit l;
  l.rate_ = rate;
  l.burst_ = std::max(1.0, burst);
  for (const auto& e : exempt) {
    auto n = ParseExemptNetwork(e);
    if (!n.ok()) return n.status();
    l.exempt_.push_back(*n);
  }
  return l;
}

bool PeerRateLimit::exempt(const asio::ip::address& peer) const {
  const ExemptNetwork a = BytesOf(Plain(peer));
  return std::any_of(exempt_.begin(), exempt_.end(), [&](const ExemptNetwork& n) { return Within(a, n); });
}

// IPv4: the address; IPv6: its /64.
std::string PeerRateLimit::KeyOf(const asio::ip::address& a) {
  const ExemptNetwork b = BytesOf(a);
  return std::string(reinterpret_cast<const char*>(b.bytes.data()), b.size == 4 ? 4 : 8);
}

void PeerRateLimit::forget_full(double now_s) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (it->second.tokens + rate_ * (now_s - it->second.at) >= burst_) it = buckets_.erase(it);
    else ++it;
  }
}

bool PeerRateLimit::admit(const asio::ip::address& peer, double now_s) {
  if (rate_ <= 0) return true;
  const auto a = Plain(peer);
  if (exempt(a)) return true;
  const std::string key = KeyOf(a);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxPeers) {
      forget_full(now_s);
      if (buckets_.size() >= kMaxPeers) buckets_.clear();
    }
    it = buckets_.emplace(key, Bucket{burst_, now_s}).first;
  }
  if (it->second.take(rate_, burst_, now_s)) return true;
  ++refused_;
  return false;
}

}  // namespace fedrt::net
