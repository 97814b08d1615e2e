// libFuzzer target: the protobuf-lite message decoders of the host and Linux
// devices (runtime/src/wire/protobuf_codec.cc). Input: one byte choosing the Envelope
// field (Hello, Welcome, the round messages, the SecAgg+ phases, Chunk, Heartbeat:
// byte % 20 + 1, the field number in runtime/wire/fedrt.proto), then that
// message's bytes. Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan);
// - every rejection (ValidateHello, DecodeTask, Inbound::decode) carries a
//   non-empty message;
// - an accepted task or round message re-encodes (EncodeTask, Encode) to
//   bytes that decode again, and encoding that second value gives the same
//   bytes: decode(encode(x)) == x on what the decoders accept.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "fedrt/wire/protobuf_codec.h"

using namespace fedrt;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;
using protocol::MessageKind;

namespace {

// The envelope holding `m`, encoded as the drivers would send it.
wire::Envelope Reencode(const wire::Inbound& in) {
  wire::Envelope env;
  switch (in.kind()) {
    case MessageKind::kAnnouncement: wire::Encode(in.announcement(), env); break;
    case MessageKind::kUpdate: wire::Encode(in.update(), env); break;
    case MessageKind::kRoundResult: wire::Encode(in.result(), env); break;
    case MessageKind::kChunk: wire::Encode(in.chunk(), env); break;
    case MessageKind::kSecAggAdvertise: wire::Encode(in.advertise(), env); break;
    case MessageKind::kSecAggKeys: wire::Encode(in.keys(), env); break;
    case MessageKind::kSecAggShares: wire::Encode(in.shares(), /*incoming=*/false, env); break;
    case MessageKind::kSecAggSharesIn: wire::Encode(in.shares(), /*incoming=*/true, env); break;
    case MessageKind::kSecAggMasked: wire::Encode(in.masked(), env); break;
    case MessageKind::kSecAggUnmaskRequest: wire::Encode(in.unmask_request(), env); break;
    case MessageKind::kSecAggCheck: wire::Encode(in.check(), /*incoming=*/false, env); break;
    case MessageKind::kSecAggChecks: wire::Encode(in.check(), /*incoming=*/true, env); break;
    case MessageKind::kSecAggUnmask: wire::Encode(in.unmask(), env); break;
    default: fuzz::Fail("Inbound::decode accepted a message of no known kind");
  }
  return env;
}

void CheckTask(const wire::Task& task) {
  task::Task t;
  Status st = wire::DecodeTask(task, t);
  if (!st.ok()) {
    RequireMessage(st.message(), "DecodeTask");
    return;
  }
  wire::Task w1, w2;
  wire::EncodeTask(t, &w1);
  task::Task t2;
  st = wire::DecodeTask(w1, t2);
  Require(st.ok(), "a re-encoded task decodes", st.message());
  wire::EncodeTask(t2, &w2);
  Require(w1.SerializeAsString() == w2.SerializeAsString(), "task round trip changed the task");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t field = 1 + data[0] % 20;  // every body of Envelope (fedrt.proto)
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  // The Envelope with `body` as its field `field` (tag, length, bytes).
  std::string bytes;
  auto varint = [&bytes](uint64_t n) {
    for (; n >= 0x80; n >>= 7) bytes += static_cast<char>((n & 0x7F) | 0x80);
    bytes += static_cast<char>(n);
  };
  varint(field << 3 | 2);
  varint(body.size());
  bytes += body;
  wire::Envelope env;
  wire::WireError err;
  if (!wire::ParseEnvelope(bytes, env, err)) {
    RequireMessage(err.message.c_str(), "ParseEnvelope");
    return 0;
  }
  switch (env.body_case()) {
    case wire::Envelope::kHello:
      if (!wire::ValidateHello(env.hello(), err)) RequireMessage(err.message.c_str(), "ValidateHello");
      return 0;
    case wire::Envelope::kWelcome: CheckTask(env.welcome().task()); return 0;
    case wire::Envelope::kAck:
    case wire::Envelope::kShutdown:
    case wire::Envelope::kError:
    case wire::Envelope::kTaskReply: {
      wire::Inbound in;
      Require(!in.decode(env, err), "a non-round message decoded as a round message");
      RequireMessage(err.message.c_str(), "Inbound::decode");
      return 0;
    }
    default: break;
  }
  wire::Inbound in;
  if (!in.decode(env, err)) {
    RequireMessage(err.message.c_str(), "Inbound::decode");
    return 0;
  }
  const wire::Envelope once = Reencode(in);
  wire::Inbound again;
  Require(again.decode(once, err), "a re-encoded round message decodes", err.message);
  Require(again.kind() == in.kind(), "round trip changed the message kind");
  const wire::Envelope twice = Reencode(again);
  Require(once.SerializeAsString() == twice.SerializeAsString(), "round trip changed the message");
  return 0;
}
