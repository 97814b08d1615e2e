// libFuzzer target: the frame reader (runtime/src/wire/frame.cc), the first
// code to touch a peer's bytes. Input: one byte choosing how the stream is
// cut into feed() calls, then the stream. Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan);
// - every rejection (a length above the maximum, an undecodable or empty
//   envelope, a bad Hello) carries a non-empty message;
// - the frames popped are exactly the stream's prefix, header and body,
//   and whatever is left over is still buffered;
// - an envelope that parses re-encodes (EncodeFrame) to a frame that
//   decodes to the same envelope.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "fedrt/wire/frame.h"

using namespace fedrt;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 64;  // feed() this many bytes at a time
  const uint8_t* stream = data + 1;
  const size_t n = size - 1;
  wire::FrameDecoder dec;
  std::string popped;  // the frames taken, header and body
  size_t fed = 0;
  bool broken = false;
  while (fed < n && !broken) {
    const size_t k = n - fed < piece ? n - fed : piece;
    dec.feed(stream + fed, k);
    fed += k;
    std::string body;
    wire::WireError err;
    int r;
    while ((r = dec.next(body, err)) == 1) {
      const uint32_t len = static_cast<uint32_t>(body.size());
      popped += std::string{char(len >> 24), char(len >> 16), char(len >> 8), char(len)} + body;
      wire::Envelope env;
      wire::WireError perr;
      if (!wire::ParseEnvelope(body, env, perr)) {
        RequireMessage(perr.message.c_str(), "ParseEnvelope");
        continue;
      }
      if (env.body_case() == wire::Envelope::kHello && !wire::ValidateHello(env.hello(), perr))
        RequireMessage(perr.message.c_str(), "ValidateHello");
      // Re-encode, decode again: the same envelope.
      const std::string again = wire::EncodeFrame(env);
      wire::FrameDecoder dec2;
      dec2.feed(reinterpret_cast<const uint8_t*>(again.data()), again.size());
      std::string body2;
      wire::Envelope env2;
      Require(dec2.next(body2, perr) == 1 && dec2.buffered() == 0, "EncodeFrame output is one whole frame");
      Require(wire::ParseEnvelope(body2, env2, perr), "a re-encoded envelope parses", perr.message);
      Require(env2.SerializeAsString() == env.SerializeAsString(), "re-encoded envelope differs");
    }
    if (r == -1) {
      RequireMessage(err.message.c_str(), "FrameDecoder::next");
      Require(err.reason == wire::ERROR_FRAME_TOO_LARGE, "frame rejection reason");
      broken = true;
    }
  }
  Require(popped.size() <= fed && popped.compare(0, popped.size(), reinterpret_cast<const char*>(stream),
                                                 popped.size()) == 0,
          "popped frames are not the stream's prefix");
  if (!broken) Require(dec.buffered() == fed - popped.size(), "bytes lost or invented by the frame reader");
  return 0;
}
