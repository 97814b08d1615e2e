// libFuzzer target: the firmware's nanopb decoder (runtime/src/fw/nanopb_codec.cc)
// compiled for the host, with the bounds of the fedrt-fw image
// (runtime/fw/fedrt_fw.options): the bytes of one frame body go through
// pb_decode into a fedrt_wire_Envelope, as in runtime/src/fw/client_poll.cc,
// then through fw::DecodeTask (a Welcome) or fw::Inbound::decode. Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan), in nanopb
//   or in the codec, whatever the counts and sizes the bytes claim;
// - every rejection by the codec carries a non-empty message;
// - an accepted Chunk re-encodes (fw::Encode) to an envelope that decodes
//   to the same chunk (the one message the firmware both reads and writes).
#include <cstdint>
#include <cstring>

#include <pb_decode.h>

#include "fuzz_util.h"
#include "fedrt/fw/nanopb_codec.h"

using namespace fedrt;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;

namespace {
fedrt_wire_Envelope env, env2;  // large (fixed arrays): not on the stack
alignas(8) uint8_t scratch[fw::Inbound::kScratchBytes];
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  env = fedrt_wire_Envelope_init_zero;
  pb_istream_t is = pb_istream_from_buffer(data, size);
  if (!pb_decode(&is, fedrt_wire_Envelope_fields, &env) || env.which_body == 0) return 0;
  if (env.which_body == fedrt_wire_Envelope_welcome_tag) {
    task::Task t;
    const Status st = fw::DecodeTask(env.body.welcome.task, t);
    if (!st.ok()) RequireMessage(st.message(), "fw::DecodeTask");
    return 0;
  }
  fw::Inbound in;
  Status st = in.decode(env, scratch, sizeof(scratch));
  if (!st.ok()) {
    RequireMessage(st.message(), "fw::Inbound::decode");
    return 0;
  }
  if (in.message().kind == protocol::MessageKind::kChunk) {
    const protocol::Chunk c = in.message().chunk;
    env2 = fedrt_wire_Envelope_init_zero;
    st = fw::Encode(c, env2);
    Require(st.ok(), "fw::Encode of a decoded chunk", st.message());
    fw::Inbound again;
    st = again.decode(env2, scratch, sizeof(scratch));
    Require(st.ok(), "a re-encoded chunk decodes", st.message());
    const protocol::Chunk& d = again.message().chunk;
    Require(d.id == c.id && d.segment == c.segment && d.offset == c.offset && d.total == c.total &&
                d.data.size == c.data.size && std::memcmp(d.data.data, c.data.data, c.data.size) == 0,
            "chunk round trip changed the chunk");
  }
  return 0;
}
