// The gateway link's messages (wire/gateway_codec.h): a partial aggregate, a
// masked sum, a round's basis and its verdict go through a frame and come
// back with every bit, NaN reports and subnormal pieces included; what
// cannot be a message of the link is refused with its reason; an envelope
// that carries a device's message and a gateway-link message at once is
// refused before anything reads it.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/wire/frame.h"
#include "fedrt/wire/gateway_codec.h"

namespace fedrt::wire {
namespace {

template <class T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Through one frame as the link sends it.
GatewayEnvelope Trip(const GatewayEnvelope& g) {
  Envelope env;
  Wrap(g, env);
  const std::string frame = EncodeFrame(env);
  Envelope back;
  WireError err;
  EXPECT_TRUE(ParseEnvelope(frame.substr(4), back, err)) << err.message;
  GatewayEnvelope out;
  std::string why;
  EXPECT_TRUE(Unwrap(back, out, why)) << why;
  return out;
}

TEST(GatewayCodec, APartialComesBackBitForBit) {
  protocol::Partial p;
  p.id = protocol::RoundId{1, 2, 3};
  p.members = {4, 7, 9};
  p.reports.resize(3);
  p.reports[1].loss_before = 0.25;
  p.reports[2].duration_ms = 17;
  p.reports[2].examples = 40;
  p.samples = {10, 0, 3};
  p.indicators = {1, 2, 1};
  p.bits_up = 12345;
  p.unclipped = {5};
  p.over_norm = {11};
  p.failure = "";
  p.sums.push_back(protocol::PartialSum{2, {1.5, -0.0, std::ldexp(1.0, -1074), 3e300}});
  p.integer_sums = {0, 65535, 1ull << 40};
  GatewayEnvelope g;
  Encode(p, g.mutable_partial());
  protocol::Partial q;
  ASSERT_TRUE(Decode(Trip(g).partial(), q).ok());
  EXPECT_EQ(q.id, p.id);
  EXPECT_EQ(q.members, p.members);
  ASSERT_EQ(q.reports.size(), 3u);
  EXPECT_TRUE(std::isnan(q.reports[0].loss_before));
  EXPECT_EQ(q.reports[1].loss_before, 0.25);
  EXPECT_EQ(q.reports[2].examples, 40u);
  EXPECT_EQ(q.samples, p.samples);
  EXPECT_EQ(q.indicators, p.indicators);
  EXPECT_EQ(q.bits_up, p.bits_up);
  EXPECT_EQ(q.unclipped, p.unclipped);
  EXPECT_EQ(q.over_norm, p.over_norm);
  ASSERT_EQ(q.sums.size(), 1u);
  EXPECT_EQ(q.sums[0].size, 2u);
  EXPECT_TRUE(SameBits(q.sums[0].layers, p.sums[0].layers));
  EXPECT_EQ(q.integer_sums, p.integer_sums);
}

TEST(GatewayCodec, MaskedSumsBasesAndVerdictsComeBack) {
  protocol::MaskedSum m;
  m.id = protocol::RoundId{0, 1, 5};
  m.members = {2, 3};
  m.reports.resize(2);
  m.sum = {0, 0xFFFFFFFFu, 12};
  GatewayEnvelope g;
  Encode(m, g.mutable_masked_sum());
  protocol::MaskedSum n;
  ASSERT_TRUE(Decode(Trip(g).masked_sum(), n).ok());
  EXPECT_EQ(n.id, m.id);
  EXPECT_EQ(n.members, m.members);
  EXPECT_EQ(n.sum, m.sum);

  protocol::RoundBasis b;
  b.id = protocol::RoundId{0, 0, protocol::kInitRound};
  b.state = {1.0, -2.5, 5e-324};
  b.down_version = 9;
  b.down_delta = {{1, 2, 3}, {}};
  b.deadline_ms = 2500;
  b.secure = true;
  g.Clear();
  Encode(b, g.mutable_round());
  protocol::RoundBasis c;
  ASSERT_TRUE(Decode(Trip(g).round(), c).ok());
  EXPECT_EQ(c.id, b.id);
  EXPECT_TRUE(SameBits(c.state, b.state));
  EXPECT_EQ(c.down_version, 9u);
  EXPECT_EQ(c.down_delta, b.down_delta);
  EXPECT_EQ(c.deadline_ms, 2500u);
  EXPECT_TRUE(c.secure);

  protocol::RoundVerdict v;
  v.id = protocol::RoundId{0, 0, 4};
  v.included = {1, 4};
  v.model = {0.5, -0.125};
  g.Clear();
  Encode(v, g.mutable_result());
  protocol::RoundVerdict w;
  ASSERT_TRUE(Decode(Trip(g).result(), w).ok());
  EXPECT_EQ(w.included, v.included);
  EXPECT_TRUE(SameBits(w.model, v.model));
}

TEST(GatewayCodec, WhatCannotBeALinkMessageIsRefused) {
  PartialAggregate a;
  PartialSum* s = a.add_sums();
  s->set_size(3);
  s->add_layers(1.0);
  s->add_layers(2.0);  // 2 values for 3 coordinates
  protocol::Partial p;
  Status st = Decode(a, p);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("a sum of 2 values for 3 coordinates"), std::string::npos) << st.message();
  s->set_size(0);
  EXPECT_FALSE(Decode(a, p).ok());  // values for no coordinate
  s->set_size(2);
  s->clear_layers();
  EXPECT_TRUE(Decode(a, p).ok());  // a zero sum: no layer
  GatewayRound r;
  r.add_state(std::numeric_limits<double>::quiet_NaN());
  protocol::RoundBasis b;
  EXPECT_FALSE(Decode(r, b).ok());
  GatewayResult res;
  res.add_model(std::numeric_limits<double>::infinity());
  protocol::RoundVerdict v;
  EXPECT_FALSE(Decode(res, v).ok());

  Envelope both;
  both.mutable_heartbeat();
  both.set_gateway("x");
  Envelope out;
  WireError err;
  EXPECT_FALSE(ParseEnvelope(both.SerializeAsString(), out, err));
  EXPECT_NE(err.message.find("a message and a gateway-link message"), std::string::npos) << err.message;
  Envelope garbage;
  garbage.set_gateway(std::string("\xff\xff\xff", 3));
  GatewayEnvelope g;
  std::string why;
  EXPECT_FALSE(Unwrap(garbage, g, why));
  EXPECT_NE(why.find("gateway-link message"), std::string::npos) << why;
  Envelope device;
  device.mutable_heartbeat();
  EXPECT_FALSE(Unwrap(device, g, why));
}

}  // namespace
}  // namespace fedrt::wire
