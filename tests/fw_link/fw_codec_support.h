#pragma once
// What the firmware codec tests share (fw_codec_test.cc, fw_codec_privacy_test.cc):
// moving an Envelope between the host's protobuf-lite and the firmware's
// nanopb code, a task with every field set, and both decoders' verdict on it.

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "fedrt/fw/nanopb_codec.h"
#include "fedrt/wire/protobuf_codec.h"
#include "sample_task.h"

namespace fedrt::fw::codec_test {


// protobuf-lite bytes -> nanopb Envelope.
inline bool ToNanopb(const wire::Envelope& in, fedrt_wire_Envelope& out) {
  const std::string bytes = in.SerializeAsString();
  std::memset(static_cast<void*>(&out), 0, sizeof out);
  pb_istream_t s = pb_istream_from_buffer(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return pb_decode(&s, fedrt_wire_Envelope_fields, &out);
}

// nanopb Envelope -> protobuf-lite, decoded by the host's Inbound.
inline bool ToHost(const fedrt_wire_Envelope& in, wire::Envelope& out) {
  std::vector<uint8_t> buf(fedrt_wire_Envelope_size);
  pb_ostream_t s = pb_ostream_from_buffer(buf.data(), buf.size());
  if (!pb_encode(&s, fedrt_wire_Envelope_fields, &in)) return false;
  return out.ParseFromArray(buf.data(), static_cast<int>(s.bytes_written));
}

struct Fixture {
  fedrt_wire_Envelope env;
  alignas(8) uint8_t scratch[Inbound::kScratchBytes];
};

using test_support::SampleTask;

// Both decoders' verdict on `t` as the coordinator encodes it.
struct Verdicts {
  Status host, fw;
  task::Task host_task, fw_task;
};
inline Verdicts DecodeBoth(const task::Task& t) {
  wire::Envelope env;
  wire::EncodeTask(t, env.mutable_welcome()->mutable_task());
  wire::Envelope back;
  EXPECT_TRUE(back.ParseFromString(env.SerializeAsString()));
  Verdicts v;
  v.host = wire::DecodeTask(back.welcome().task(), v.host_task);
  static Fixture f;
  EXPECT_TRUE(ToNanopb(env, f.env));
  EXPECT_EQ(f.env.which_body, fedrt_wire_Envelope_welcome_tag);
  v.fw = DecodeTask(f.env.body.welcome.task, v.fw_task);
  return v;
}

}  // namespace fedrt::fw::codec_test
