#include "private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace fedrt::net {

namespace {

// Writes all of `data` to `path`; fsyncs it when `sync`.
Status WriteAll(const std::string& path, const std::string& data, bool sync) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status(StatusCode::kPermissionDenied, fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  ::fchmod(fd, 0600);  // an existing file keeps its mode through O_CREAT
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return Status(StatusCode::kDataLoss, fmt::format("short write to '{}': {}", path, std::strerror(e)));
    }
    off += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    return Status(StatusCode::kDataLoss, fmt::format("cannot sync '{}': {}", path, std::strerror(e)));
  }
  if (::close(fd) != 0)
    return Status(StatusCode::kDataLoss, fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  return Status::Ok();
}

}  // namespace

Status WritePrivateFile(const std::string& path, const std::string& data) { return WriteAll(path, data, false); }

Status ReplacePrivateFile(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  Status st = WriteAll(tmp, data, true);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Status(StatusCode::kDataLoss, fmt::format("cannot replace '{}': {}", path, std::strerror(e)));
  }
  // The rename itself survives a power cut once the folder is synced.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, fmt::format("cannot read '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kDataLoss, fmt::format("cannot read '{}'", path));
  return ss.str();
}

}  // namespace fedrt::net
