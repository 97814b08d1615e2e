// Wire format: framing, maximum frame size, decode-side validation.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/net/network_config.h"
#include "fedrt/net/tls.h"
#include "fedrt/net/wire.h"

namespace fedrt::net {
namespace {

wire::Envelope MakeUpdate(int d, double fill) {
  wire::Envelope env;
  std::vector<double> v(static_cast<size_t>(d), fill);
  env.mutable_update()->set_round(7);
  env.mutable_update()->set_payload(EncodeRawPayload(v.data(), d));
  return env;
}

TEST(Wire, FramesRoundTripAcrossArbitrarySplits) {
  const std::string a = EncodeFrame(MakeUpdate(8, 1.5));
  const std::string b = EncodeFrame(MakeUpdate(8, -2.0));
  const std::string stream = a + b;
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameDecoder dec;
    dec.feed(reinterpret_cast<const uint8_t*>(stream.data()), cut);
    dec.feed(reinterpret_cast<const uint8_t*>(stream.data()) + cut, stream.size() - cut);
    std::string body;
    WireError err;
    ASSERT_EQ(dec.next(body, err), 1);
    wire::Envelope env;
    ASSERT_TRUE(ParseEnvelope(body, env, err));
    std::vector<double> v;
    ASSERT_TRUE(DecodeRawPayload(env.update().payload(), 8, v, err));
    EXPECT_EQ(v[3], 1.5);
    ASSERT_EQ(dec.next(body, err), 1);
    ASSERT_TRUE(ParseEnvelope(body, env, err));
    ASSERT_TRUE(DecodeRawPayload(env.update().payload(), 8, v, err));
    EXPECT_EQ(v[0], -2.0);
    EXPECT_EQ(dec.next(body, err), 0);
  }
}

TEST(Wire, RejectsLengthAboveMaximumBeforeBuffering) {
  const uint32_t n = kMaxFrameBytes + 1;
  const uint8_t hdr[4] = {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
  FrameDecoder dec;
  dec.feed(hdr, 4);
  std::string body;
  WireError err;
  EXPECT_EQ(dec.next(body, err), -1);
  EXPECT_EQ(err.reason, wire::ERROR_FRAME_TOO_LARGE);
  EXPECT_NE(err.message.find("exceeds the maximum"), std::string::npos);
}

TEST(Wire, RejectsGarbageAndEmptyEnvelopes) {
  wire::Envelope env;
  WireError err;
  EXPECT_FALSE(ParseEnvelope(std::string("\xff\xff\xff\xff\xff\xff", 6), env, err));
  EXPECT_EQ(err.reason, wire::ERROR_MALFORMED);
  EXPECT_FALSE(ParseEnvelope(std::string(), env, err));
  EXPECT_EQ(err.reason, wire::ERROR_MALFORMED);
}

TEST(Wire, PayloadValidationNamesDimensionAndNonFinite) {
  std::vector<double> v(8, 0.25), out;
  WireError err;
  EXPECT_FALSE(DecodeRawPayload(EncodeRawPayload(v.data(), 7), 8, out, err));
  EXPECT_EQ(err.reason, wire::ERROR_DIMENSION);
  v[5] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(DecodeRawPayload(EncodeRawPayload(v.data(), 8), 8, out, err));
  EXPECT_EQ(err.reason, wire::ERROR_NON_FINITE);
  EXPECT_NE(err.message.find("value 5"), std::string::npos);
  v[5] = -std::numeric_limits<double>::infinity();
  EXPECT_FALSE(DecodeRawPayload(EncodeRawPayload(v.data(), 8), 8, out, err));
  EXPECT_EQ(err.reason, wire::ERROR_NON_FINITE);
  v[5] = 3.0;
  EXPECT_TRUE(DecodeRawPayload(EncodeRawPayload(v.data(), 8), 8, out, err));
  EXPECT_EQ(out[5], 3.0);
}

TEST(Wire, HelloValidation) {
  wire::Hello h;
  WireError err;
  h.set_protocol_version(kProtocolVersion + 1);
  h.set_device_id("dev0001");
  EXPECT_FALSE(ValidateHello(h, err));
  EXPECT_EQ(err.reason, wire::ERROR_PROTOCOL_VERSION);
  h.set_protocol_version(kProtocolVersion);
  EXPECT_TRUE(ValidateHello(h, err));
  h.set_device_id(std::string(kMaxIdChars + 1, 'a'));
  EXPECT_FALSE(ValidateHello(h, err));
  h.set_device_id("dev 1");
  EXPECT_FALSE(ValidateHello(h, err));
  EXPECT_EQ(err.reason, wire::ERROR_IDENTITY);
}

TEST(Wire, HexAndNetworkConfigValidation) {
  bool ok = false;
  EXPECT_EQ(HexToBytes("00ff10", &ok), (std::vector<uint8_t>{0, 255, 16}));
  EXPECT_TRUE(ok);
  HexToBytes("0g", &ok);
  EXPECT_FALSE(ok);
  NetworkConfig n;
  EXPECT_TRUE(ValidateNetwork(n).ok());
  n.quorum = 0;
  EXPECT_FALSE(ValidateNetwork(n).ok());
  n.quorum = 1;
  n.auth = "none";
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.auth"), std::string::npos);
}

}  // namespace
}  // namespace fedrt::net
