// The compact binary record file (fedrt/data/shard.h): a 24-byte header and
// fixed-size records, so a board reads it without parsing text.
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "fedrt/data/shard.h"

namespace fedrt::data {
namespace {

constexpr char kMagic[8] = {'F', 'E', 'D', 'R', 'T', 'R', 'E', 'C'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxDim = 1u << 24;

template <typename T>
void PutLe(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the project's targets are little-endian (docs/data.md)
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}
template <typename T>
T GetLe(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

Status WriteRecordShard(const std::string& path, const Shard& s) {
  std::string out(kMagic, sizeof kMagic);
  PutLe<uint32_t>(out, kVersion);
  PutLe<uint32_t>(out, s.dim);
  PutLe<uint64_t>(out, s.count());
  for (uint64_t j = 0; j < s.count(); ++j) {
    for (uint32_t k = 0; k < s.dim; ++k) PutLe<double>(out, s.x[j * s.dim + k]);
    PutLe<double>(out, s.y[j]);
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status(StatusCode::kNotFound, fmt::format("{}: cannot create", path));
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!f) return Status(StatusCode::kDataLoss, fmt::format("{}: write failed", path));
  return Status::Ok();
}

Result<Shard> ReadRecordShard(const std::string& path, LabelKind kind, uint32_t classes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(StatusCode::kNotFound, fmt::format("{}: cannot open", path));
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return Status::Invalid(fmt::format("{}: not a fedrt record file (no FEDRTREC header)", path));
  const uint32_t version = GetLe<uint32_t>(bytes.data() + 8);
  if (version != kVersion) return Status::Invalid(fmt::format("{}: record file version {}, this build reads {}", path, version, kVersion));
  Shard s;
  s.path = path;
  s.dim = GetLe<uint32_t>(bytes.data() + 12);
  const uint64_t count = GetLe<uint64_t>(bytes.data() + 16);
  if (s.dim == 0 || s.dim > kMaxDim) return Status::Invalid(fmt::format("{}: dim {} out of range [1, {}]", path, s.dim, kMaxDim));
  if (count == 0) return Status::Invalid(fmt::format("{}: no records", path));
  const uint64_t record = 8ull * (s.dim + 1ull);
  if (count > (bytes.size() - 24) / record || bytes.size() != 24 + count * record)
    return Status::Invalid(fmt::format("{}: {} bytes, but the header announces {} records of {} bytes", path, bytes.size(), count,
                           record));
  s.x.resize(count * s.dim);
  s.y.resize(count);
  for (uint32_t k = 0; k < s.dim; ++k) s.features.push_back(fmt::format("x{}", k + 1));
  const char* p = bytes.data() + 24;
  for (uint64_t j = 0; j < count; ++j) {
    for (uint32_t k = 0; k <= s.dim; ++k) {
      const double v = GetLe<double>(p + 8 * k);
      if (k == s.dim && kind == LabelKind::kNone) break;  // the label slot is ignored (y stays 0)
      if (!std::isfinite(v))
        return Status::Invalid(fmt::format("{}: record {} field {}: not a finite number (NaN and Inf are refused)", path, j, k + 1));
      if (k < s.dim) {
        s.x[j * s.dim + k] = v;
      } else if (!StoredLabel(kind, classes, v, s.y[j])) {
        return Status::Invalid(fmt::format("{}: record {}: label {} is not {}", path, j, v, LabelClasses(kind, classes)));
      }
    }
    p += record;
  }
  return s;
}

}  // namespace fedrt::data
