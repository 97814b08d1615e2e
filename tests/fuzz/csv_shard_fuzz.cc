// libFuzzer target: the CSV shard loader (runtime/src/data/csv_shard.cc,
// docs/data.md), which reads a device's own data file. Input: one byte
// choosing the model's labels (real, binary, class with K in [1, 16], none)
// then the file's bytes, written to a scratch file (the loader reads paths).
// The label column is named "y". Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan);
// - every rejection carries a non-empty message;
// - an accepted shard has count x dim finite values and labels of its
//   kind, and (with a label column) writes back (WriteCsvShard) to a file
//   that reads to the same values, bit for bit.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "shard_properties.h"

using namespace fedrt;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;
using fedrt::fuzz::SameBits;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file(".csv"), again(".csv");
  if (size < 1) return 0;
  const auto kind = static_cast<data::LabelKind>(data[0] % 4);
  const uint32_t classes = 1 + (data[0] >> 2) % 16;
  auto shard = data::ReadCsvShard(file.write(data + 1, size - 1), "y", kind, classes);
  if (!shard.ok()) {
    RequireMessage(shard.status().message(), "ReadCsvShard");
    return 0;
  }
  const data::Shard& s = *shard;
  fuzz::RequireValidShard(s, kind, classes);
  if (kind == data::LabelKind::kNone) return 0;  // no label column to write back
  data::Shard plain = s;
  plain.features.clear();  // x1, x2, ...: the writer does not quote names
  Require(data::WriteCsvShard(again.path(), plain, "y").ok(), "WriteCsvShard");
  auto back = data::ReadCsvShard(again.path(), "y", kind, classes);
  Require(back.ok(), "a written shard reads back", back.ok() ? "" : back.status().message());
  Require(back->dim == s.dim && SameBits(back->x, s.x) && SameBits(back->y, s.y), "CSV round trip changed the shard");
  return 0;
}
