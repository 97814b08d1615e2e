// coordinator/peer_rate_limit.h: the token bucket per address, the exempt networks,
// IPv6 grouped by /64, and the bounded table.
#include <gtest/gtest.h>

#include "fedrt/coordinator/peer_rate_limit.h"

namespace fedrt::net {
namespace {

asio::ip::address A(const char* s) { return asio::ip::make_address(s); }

TEST(PeerRateLimitTest, BurstThenRate) {
  auto l = PeerRateLimit::Make(8, 5, {});  // times below are binary fractions: exact sums
  ASSERT_TRUE(l.ok());
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += l->admit(A("10.0.0.1"), 100.0) ? 1 : 0;
  EXPECT_EQ(admitted, 5);  // the burst, all at one instant
  EXPECT_FALSE(l->admit(A("10.0.0.1"), 100.0625));  // half a token refilled
  EXPECT_TRUE(l->admit(A("10.0.0.1"), 100.125));    // one token at 8 per second
  EXPECT_FALSE(l->admit(A("10.0.0.1"), 100.125));
  EXPECT_TRUE(l->admit(A("10.0.0.2"), 100.125));    // another address has its own bucket
  // Over 2 s after a long pause: the burst plus 8 per second.
  admitted = 0;
  for (int ms = 0; ms < 2000; ++ms) admitted += l->admit(A("10.0.0.1"), 200.0 + ms / 1000.0) ? 1 : 0;
  EXPECT_GE(admitted, 5 + 15);
  EXPECT_LE(admitted, 5 + 16);
  EXPECT_EQ(l->refused(), 15u + 1 + 1 + (2000u - admitted));
}

TEST(PeerRateLimitTest, ExemptNetworksAndMappedAddresses) {
  auto l = PeerRateLimit::Make(1, 1, {"127.0.0.0/8", "::1", "192.168.4.0/22"});
  ASSERT_TRUE(l.ok());
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(l->admit(A("127.0.0.1"), 0));
    EXPECT_TRUE(l->admit(A("127.3.2.1"), 0));
    EXPECT_TRUE(l->admit(A("::1"), 0));
    EXPECT_TRUE(l->admit(A("::ffff:127.0.0.1"), 0));  // IPv4 through an IPv6 socket
    EXPECT_TRUE(l->admit(A("192.168.7.255"), 0));
  }
  EXPECT_TRUE(l->admit(A("192.168.8.0"), 0));  // outside the /22: limited
  EXPECT_FALSE(l->admit(A("192.168.8.0"), 0));
  EXPECT_TRUE(l->admit(A("::ffff:10.1.1.1"), 0));
  EXPECT_FALSE(l->admit(A("10.1.1.1"), 0));  // the same address, mapped or not
  EXPECT_EQ(l->tracked(), 2u);
}

TEST(PeerRateLimitTest, Ipv6AddressesOfOneSlash64ShareABucket) {
  auto l = PeerRateLimit::Make(1, 2, {});
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->admit(A("2001:db8:1:2::1"), 0));
  EXPECT_TRUE(l->admit(A("2001:db8:1:2:ffff::9"), 0));
  EXPECT_FALSE(l->admit(A("2001:db8:1:2:abcd::7"), 0));
  EXPECT_TRUE(l->admit(A("2001:db8:1:3::1"), 0));  // the next /64
}

TEST(PeerRateLimitTest, TheTableStaysBounded) {
  auto l = PeerRateLimit::Make(1000, 1, {});
  ASSERT_TRUE(l.ok());
  for (uint32_t i = 0; i < PeerRateLimit::kMaxPeers + 1000; ++i)
    l->admit(asio::ip::address_v4(0x0a000000u + i), i * 1e-6);  // 10.x.y.z, one each microsecond
  EXPECT_LE(l->tracked(), PeerRateLimit::kMaxPeers);
  EXPECT_EQ(l->refused(), 0u);
}

TEST(PeerRateLimitTest, NoLimitAtRateZero) {
  auto l = PeerRateLimit::Make(0, 1, {});
  ASSERT_TRUE(l.ok());
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(l->admit(A("10.0.0.1"), 0));
  EXPECT_EQ(l->tracked(), 0u);
}

TEST(PeerRateLimitTest, BadExemptEntriesAreNamed) {
  EXPECT_NE(std::string(PeerRateLimit::Make(1, 1, {"10.0.0.0/33"}).status().message()).find("'10.0.0.0/33'"),
            std::string::npos);
  EXPECT_NE(std::string(ParseExemptNetwork("localhost").status().message()).find("not an IP address"),
            std::string::npos);
  EXPECT_FALSE(ParseExemptNetwork("::1/129").ok());
  EXPECT_FALSE(ParseExemptNetwork("10.0.0.1/").ok());
  EXPECT_FALSE(ParseExemptNetwork("10.0.0.1/+8").ok());
  auto ll = ParseExemptNetwork("fe80::/10");
  ASSERT_TRUE(ll.ok());
  EXPECT_EQ(ll->size, 16u);
  EXPECT_EQ(ll->prefix, 10u);
}

}  // namespace
}  // namespace fedrt::net
