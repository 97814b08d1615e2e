// libFuzzer target: the record shard loader (runtime/src/data/record_shard.cc,
// docs/data.md: "FEDRTREC", u32 version, u32 dim, u64 count, then records of
// little-endian float64). Input: one byte choosing the model's labels (real,
// binary, class with K in [1, 16], none), then the file's bytes, written to
// a scratch file (the loader reads paths). Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan), and no
//   allocation sized by the header's claims beyond what the file holds;
// - every rejection carries a non-empty message;
// - an accepted shard has count x dim finite values and labels of its kind,
//   and writes back (WriteRecordShard) to a file that reads to the same
//   values, bit for bit.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "shard_properties.h"

using namespace fedrt;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;
using fedrt::fuzz::SameBits;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file(".rec"), again(".rec");
  if (size < 1) return 0;
  const auto kind = static_cast<data::LabelKind>(data[0] % 4);
  const uint32_t classes = 1 + (data[0] >> 2) % 16;
  auto shard = data::ReadRecordShard(file.write(data + 1, size - 1), kind, classes);
  if (!shard.ok()) {
    RequireMessage(shard.status().message(), "ReadRecordShard");
    return 0;
  }
  const data::Shard& s = *shard;
  fuzz::RequireValidShard(s, kind, classes);
  Require(data::WriteRecordShard(again.path(), s).ok(), "WriteRecordShard");
  auto back = data::ReadRecordShard(again.path(), kind, classes);
  Require(back.ok(), "a written shard reads back", back.ok() ? "" : back.status().message());
  Require(back->dim == s.dim && SameBits(back->x, s.x) && SameBits(back->y, s.y), "record round trip changed the shard");
  return 0;
}
