#include "fedrt/keys/revocations.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "private_file.h"

namespace fedrt::net {

namespace {

constexpr const char* kHeader = "# id\trevoked_at (unix seconds)\treason\n";

bool HasSpace(const std::string& s) {
  for (char c : s)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return true;
  return false;
}

}  // namespace

std::string CleanReason(const std::string& reason) {
  std::string out = reason;
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  if (out.size() > kMaxReasonBytes) {
    size_t cut = kMaxReasonBytes;
    // Do not split a UTF-8 sequence: back off over continuation bytes.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  return out;
}

Result<std::vector<Revocation>> ReadRevocations(const std::string& path) {
  std::vector<Revocation> out;
  std::ifstream in(path);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return out;  // nobody revoked yet
    return Status(StatusCode::kPermissionDenied, fmt::format("cannot read revocation list '{}'", path));
  }
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:{}: {} (expected 'id<TAB>revoked_at<TAB>reason')", path, lineno, why));
    };
    const size_t t1 = line.find('\t');
    if (t1 == std::string::npos) return bad("no revoked_at field");
    const size_t t2 = line.find('\t', t1 + 1);
    if (t2 != std::string::npos && line.find('\t', t2 + 1) != std::string::npos) return bad("more than three fields");
    Revocation r;
    r.id = line.substr(0, t1);
    if (r.id.empty() || HasSpace(r.id)) return bad(fmt::format("bad device id '{}'", r.id));
    const std::string at = line.substr(t1 + 1, t2 == std::string::npos ? std::string::npos : t2 - t1 - 1);
    char* end = nullptr;
    errno = 0;
    r.revoked_at = std::strtod(at.c_str(), &end);
    if (at.empty() || end != at.c_str() + at.size() || errno != 0 || !std::isfinite(r.revoked_at) || r.revoked_at < 0)
      return bad(fmt::format("revoked_at '{}' is not a time in unix seconds", at));
    if (t2 != std::string::npos) r.reason = line.substr(t2 + 1);
    out.push_back(std::move(r));
  }
  if (in.bad()) return Status(StatusCode::kDataLoss, fmt::format("cannot read revocation list '{}'", path));
  return out;
}

Status WriteRevocations(const std::string& path, const std::vector<Revocation>& list) {
  std::string text = kHeader;
  for (const Revocation& r : list) {
    if (r.id.empty() || HasSpace(r.id))
      return Status(StatusCode::kInvalidArgument, fmt::format("revocation list '{}': bad device id '{}'", path, r.id));
    if (!std::isfinite(r.revoked_at) || r.revoked_at < 0)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("revocation list '{}': device '{}' has no valid revocation time", path, r.id));
    text += fmt::format("{}\t{}\t{}\n", r.id, r.revoked_at, CleanReason(r.reason));
  }
  return ReplacePrivateFile(path, text);
}

}  // namespace fedrt::net
