#include "fedrt/coordinator/state_watermark.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace fedrt::net {

std::string WatermarkPath(const std::string& state) { return state + ".rounds"; }

Result<uint64_t> ReadWatermark(const std::string& state) {
  const std::string path = WatermarkPath(state);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return uint64_t{0};
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kUnavailable, fmt::format("cannot read '{}'", path));
  std::string word;
  unsigned long long rounds = 0;
  if (!(in >> rounds >> word) || word != "committed_rounds")
    return Status(StatusCode::kDataLoss,
                  fmt::format("'{}' is not a state watermark (expected 'N committed_rounds'): restore it with the "
                              "state db, or remove both to start a new run",
                              path));
  return static_cast<uint64_t>(rounds);
}

Status WriteWatermark(const std::string& state, uint64_t rounds) {
  const std::string path = WatermarkPath(state), tmp = path + ".tmp";
  const std::string text = fmt::format("{} committed_rounds\n", rounds);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status(StatusCode::kUnavailable, fmt::format("cannot write '{}': {}", tmp, std::strerror(errno)));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot write '{}': {}", path, std::strerror(ok ? errno : err)));
  return Status::Ok();
}

std::string RollbackMessage(const std::string& state, uint64_t held, uint64_t recorded) {
  return fmt::format(
      "state db '{}' holds {} committed rounds but its watermark '{}' records {}: the db was emptied, replaced or "
      "rolled back (a -wal file lost?) and resuming would silently repeat rounds the devices already committed. "
      "Restore the db together with its -wal from a backup (docs/security.md, \"Backing up the state\"), or give "
      "--accept-rollback to resume from what the db holds",
      state, held, WatermarkPath(state), recorded);
}

}  // namespace fedrt::net
