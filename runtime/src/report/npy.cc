#include "fedrt/report/npy.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace fedrt::report {

std::string NpyHeader(size_t rows, size_t cols) {
  std::string dict = fmt::format("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  const size_t fixed = 10;  // magic (6), version (2), header length (2)
  const size_t total = (fixed + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - fixed - dict.size() - 1, ' ');
  dict.push_back('\n');
  const size_t len = dict.size();
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>((len >> 8) & 0xff));
  return out + dict;
}

Status WriteNpy(const std::string& path, const std::vector<Eigen::VectorXd>& rows, size_t cols) {
  for (size_t r = 0; r < rows.size(); ++r)
    if (static_cast<size_t>(rows[r].size()) != cols)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: row {} has {} values, the array has {} columns", path, r, rows[r].size(), cols));
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Status(StatusCode::kPermissionDenied, fmt::format("cannot write '{}'", path));
  const std::string header = NpyHeader(rows.size(), cols);
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  // '<f8' whatever the host's byte order: each value's bits, low byte first.
  std::vector<unsigned char> buf;
  for (size_t r = 0; ok && r < rows.size(); ++r) {
    buf.resize(cols * 8);
    for (size_t j = 0; j < cols; ++j) {
      uint64_t bits;
      std::memcpy(&bits, &rows[r][static_cast<Eigen::Index>(j)], 8);
      for (int b = 0; b < 8; ++b) buf[j * 8 + b] = static_cast<unsigned char>(bits >> (8 * b));
    }
    ok = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return Status(StatusCode::kDataLoss, fmt::format("error writing '{}'", path));
  return Status::Ok();
}

}  // namespace fedrt::report
