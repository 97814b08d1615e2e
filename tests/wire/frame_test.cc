// Frames on the byte stream: arbitrary splits, the maximum frame size checked
// before buffering, undecodable and empty envelopes, Hello validation.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/wire/frame.h"

namespace fedrt::wire {
namespace {

Envelope MakeUpdate(uint32_t round, char fill) {
  Envelope env;
  env.mutable_update()->set_round(round);
  env.mutable_update()->add_payload(std::string(64, fill));
  return env;
}

TEST(WireFrame, FramesRoundTripAcrossArbitrarySplits) {
  const std::string stream = EncodeFrame(MakeUpdate(7, 'a')) + EncodeFrame(MakeUpdate(8, 'b'));
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameDecoder dec;
    dec.feed(reinterpret_cast<const uint8_t*>(stream.data()), cut);
    dec.feed(reinterpret_cast<const uint8_t*>(stream.data()) + cut, stream.size() - cut);
    std::string body;
    WireError err;
    Envelope env;
    ASSERT_EQ(dec.next(body, err), 1);
    ASSERT_TRUE(ParseEnvelope(body, env, err));
    EXPECT_EQ(env.update().round(), 7u);
    EXPECT_EQ(env.update().payload(0), std::string(64, 'a'));
    ASSERT_EQ(dec.next(body, err), 1);
    ASSERT_TRUE(ParseEnvelope(body, env, err));
    EXPECT_EQ(env.update().round(), 8u);
    EXPECT_EQ(env.update().payload(0), std::string(64, 'b'));
    EXPECT_EQ(dec.next(body, err), 0);
    EXPECT_EQ(dec.buffered(), 0u);
  }
}

TEST(WireFrame, RejectsLengthAboveMaximumBeforeBuffering) {
  const uint32_t n = task::kMaxLinuxFrameBytes + 1;
  const uint8_t hdr[4] = {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
  FrameDecoder dec;
  dec.feed(hdr, 4);
  std::string body;
  WireError err;
  EXPECT_EQ(dec.next(body, err), -1);
  EXPECT_EQ(err.reason, ERROR_FRAME_TOO_LARGE);
  EXPECT_NE(err.message.find("exceeds the maximum"), std::string::npos) << err.message;
}

// The coordinator's limit before registration (kMaxHelloFrameBytes) holds
// the longest legal Hello with room to spare, and refuses a larger frame
// from its header alone; set back to the Linux limit, the decoder takes it.
TEST(WireFrame, TheLongestHelloFitsThePreRegistrationLimit) {
  Envelope env;
  Hello* h = env.mutable_hello();
  h->set_protocol_version(0xFFFFFFFFu);
  h->set_device_id(std::string(task::kMaxIdChars, 'd'));
  h->set_provisioned_problem(~uint64_t{0});
  h->set_has_pending(true);
  h->set_pending_algorithm(0xFFFFFFFFu);
  h->set_pending_run(0xFFFFFFFFu);
  h->set_pending_round(0xFFFFFFFFu);
  h->set_max_chunk_bytes(0xFFFFFFFFu);
  h->set_platform(std::string(task::kMaxPlatformChars, 'p'));
  h->set_heartbeats(true);
  const std::string frame = EncodeFrame(env);
  std::printf("longest Hello: %zu bytes of body (limit before registration %u)\n",
              frame.size() - kFrameHeaderBytes, kMaxHelloFrameBytes);
  EXPECT_LE(frame.size() - kFrameHeaderBytes, 200u);
  FrameDecoder dec;
  dec.set_limit(kMaxHelloFrameBytes);
  dec.feed(reinterpret_cast<const uint8_t*>(frame.data()), frame.size());
  std::string body;
  WireError err;
  EXPECT_EQ(dec.next(body, err), 1);
  const uint32_t n = kMaxHelloFrameBytes + 1;
  const uint8_t hdr[4] = {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
  dec.feed(hdr, 4);
  EXPECT_EQ(dec.next(body, err), -1);
  EXPECT_NE(err.message.find("before registration"), std::string::npos) << err.message;
  FrameDecoder registered;
  registered.feed(hdr, 4);
  EXPECT_EQ(registered.next(body, err), 0) << "a registered device's frames may be 16 MiB";
}

TEST(WireFrame, RejectsGarbageAndEmptyEnvelopes) {
  Envelope env;
  WireError err;
  EXPECT_FALSE(ParseEnvelope(std::string("\xff\xff\xff\xff\xff\xff", 6), env, err));
  EXPECT_EQ(err.reason, ERROR_MALFORMED);
  EXPECT_FALSE(ParseEnvelope(std::string(), env, err));
  EXPECT_EQ(err.reason, ERROR_MALFORMED);
}

TEST(WireFrame, HelloValidation) {
  Hello h;
  WireError err;
  h.set_protocol_version(kProtocolVersion + 1);
  h.set_device_id("dev0001");
  EXPECT_FALSE(ValidateHello(h, err));
  EXPECT_EQ(err.reason, ERROR_PROTOCOL_VERSION);
  h.set_protocol_version(kProtocolVersion);
  EXPECT_TRUE(ValidateHello(h, err));
  h.set_device_id(std::string(task::kMaxIdChars + 1, 'a'));
  EXPECT_FALSE(ValidateHello(h, err));
  EXPECT_EQ(err.reason, ERROR_IDENTITY);
  h.set_device_id("dev 1");
  EXPECT_FALSE(ValidateHello(h, err));
  EXPECT_EQ(err.reason, ERROR_IDENTITY);
}

}  // namespace
}  // namespace fedrt::wire
