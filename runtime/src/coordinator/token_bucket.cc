// TokenBucket (coordinator/peer_rate_limit.h): a connection's message budget
// and an address's connection rate; apart so that a gateway's connections
// (fedrt_downstream) have it without the coordinator's network settings.
#include <algorithm>

#include "fedrt/coordinator/peer_rate_limit.h"

namespace fedrt::net {

bool TokenBucket::take(double rate, double burst, double now_s) {
  tokens = std::min(burst, tokens + rate * std::max(0.0, now_s - at));
  at = now_s;
  if (tokens < 1.0) return false;
  tokens -= 1.0;
  return true;
}

}  // namespace fedrt::net
