#include "fedrt/net/device_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "fedrt/config/fingerprint.h"

namespace fedrt::net {

namespace {
constexpr const char* kMagic = "fedrt-device-state";
constexpr int kVersion = 2;
std::string PathOf(const std::string& dir) { return dir + "/session.state"; }
uint64_t Checksum(const std::vector<uint8_t>& bytes) {
  config::Fnv1a h;
  h.bytes(bytes.data(), bytes.size());
  return h.value();
}
}  // namespace

Result<std::optional<SavedSession>> LoadSavedSession(const std::string& dir) {
  if (dir.empty()) return std::optional<SavedSession>();
  const std::string path = PathOf(dir);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::optional<SavedSession>();  // first start
  auto bad = [&](const char* why) {
    return Status(StatusCode::kDataLoss, fmt::format("state file '{}' is damaged: {} (remove it to start fresh)", path, why));
  };
  std::string header;
  if (!std::getline(in, header)) return bad("no header");
  std::istringstream h(header);
  std::string magic, fp;
  int version = 0, pending = 0;
  size_t n = 0;
  uint64_t sum = 0;
  SavedSession s;
  if (!(h >> magic >> version >> fp >> s.algorithm >> s.run >> s.agent >> pending >> s.pending_round >> n >> sum) ||
      magic != kMagic)
    return bad("not a fedrt device state");
  if (version != kVersion) return bad("written by another version");
  if (n > (64u << 20)) return bad("state larger than 64 MiB");
  s.fingerprint = std::strtoull(fp.c_str(), nullptr, 16);
  s.pending = pending != 0;
  s.state.resize(n);
  if (!in.read(reinterpret_cast<char*>(s.state.data()), static_cast<std::streamsize>(n))) return bad("truncated");
  if (Checksum(s.state) != sum) return bad("checksum mismatch");
  return std::optional<SavedSession>(std::move(s));
}

Status SaveSession(const std::string& dir, const SavedSession& s, bool durable) {
  if (dir.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = PathOf(dir), tmp = path + ".tmp";
  const std::string header = fmt::format("{} {} {:016x} {} {} {} {} {} {} {}\n", kMagic, kVersion, s.fingerprint,
                                         s.algorithm, s.run, s.agent, s.pending ? 1 : 0, s.pending_round,
                                         s.state.size(), Checksum(s.state));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return Status(StatusCode::kUnavailable, fmt::format("cannot write state file '{}'", tmp));
  bool ok = ::write(fd, header.data(), header.size()) == static_cast<ssize_t>(header.size());
  ok = ok && ::write(fd, s.state.data(), s.state.size()) == static_cast<ssize_t>(s.state.size());
  ok = ok && (!durable || ::fsync(fd) == 0);
  ::close(fd);
  if (!ok) return Status(StatusCode::kDataLoss, fmt::format("short write to state file '{}'", tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status(StatusCode::kDataLoss, fmt::format("cannot replace state file '{}'", path));
  return Status::Ok();
}

}  // namespace fedrt::net
