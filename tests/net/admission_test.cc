// Admission (coordinator/admission.h): the accept path's decisions without
// sockets: a peer over its rate, the connection cap, the handshake cap that
// drops the oldest, and a registered device's idle clock.
#include <gtest/gtest.h>

#include "fedrt/coordinator/admission.h"

namespace fedrt::net {
namespace {

Admission Make(size_t connections, size_t handshakes, double rate, double burst) {
  auto r = PeerRateLimit::Make(rate, burst, {});
  EXPECT_TRUE(r.ok());
  return Admission(connections, handshakes, std::move(*r));
}

TEST(Admission, RefusesAPeerOverItsRateAndOthersStillGetIn) {
  Admission a = Make(100, 10, 1.0, 2.0);
  const auto noisy = asio::ip::make_address("10.0.0.7"), other = asio::ip::make_address("10.0.0.8");
  EXPECT_EQ(a.admit(&noisy, 0.0, 0, 0), Admission::Verdict::kAdmit);
  EXPECT_EQ(a.admit(&noisy, 0.0, 1, 1), Admission::Verdict::kAdmit);          // its burst of 2
  EXPECT_EQ(a.admit(&noisy, 0.0, 2, 2), Admission::Verdict::kPeerRate);
  EXPECT_EQ(a.admit(&other, 0.0, 2, 2), Admission::Verdict::kAdmit);
  EXPECT_EQ(a.admit(&noisy, 1.0, 3, 3), Admission::Verdict::kAdmit);          // one token a second
  EXPECT_EQ(a.admit(nullptr, 1.0, 3, 3), Admission::Verdict::kAdmit);         // no address: no rate to keep
}

TEST(Admission, CapsConnectionsAndMakesRoomAmongHandshakes) {
  Admission a = Make(4, 2, 0.0, 1.0);  // rate 0: no per-peer limit
  const auto peer = asio::ip::make_address("192.0.2.1");
  EXPECT_EQ(a.admit(&peer, 0.0, 1, 1), Admission::Verdict::kAdmit);
  EXPECT_EQ(a.admit(&peer, 0.0, 2, 2), Admission::Verdict::kAdmitDroppingOldest);
  EXPECT_EQ(a.admit(&peer, 0.0, 4, 0), Admission::Verdict::kConnections);
  EXPECT_EQ(a.max_connections(), 4u);
  EXPECT_EQ(a.max_handshakes(), 2u);
}

TEST(Admission, ADeviceIsIdleOnlyAfterTheTimeoutAndNotWhileItWorks) {
  uint64_t heard = 1000;
  EXPECT_FALSE(Admission::Idle(1500, heard, 500, false));
  EXPECT_TRUE(Admission::Idle(1501, heard, 500, false));
  EXPECT_FALSE(Admission::Idle(5000, heard, 500, true));  // it owes the round: the clock restarts
  EXPECT_EQ(heard, 5000u);
  EXPECT_FALSE(Admission::Idle(5400, heard, 500, false));
  EXPECT_FALSE(Admission::Idle(1u << 30, heard, 0, false));  // no timeout configured
}

}  // namespace
}  // namespace fedrt::net
