#pragma once
// The POSIX device's log lines on stderr: "<UTC time> device <id> <event>",
// every event (info), only problems (warn: lines starting with warning,
// refused, error, coordinator error, disconnected, connect failed) or
// nothing. Host code.

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fedrt/device.h"

namespace fedrt::net {

// UTC time of a log line, "YYYY-MM-DDTHH:MM:SS.mmmZ" (ISO 8601, milliseconds).
inline std::string UtcTimestamp() {
  const auto t = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms % 1000));
}

class DeviceLog {
 public:
  DeviceLog(std::string id, DeviceLogLevel level, bool quiet) : id_(std::move(id)), level_(quiet ? DeviceLogLevel::kOff : level) {}

  template <class... Args>
  void operator()(fmt::format_string<Args...> f, Args&&... args) const {
    if (level_ == DeviceLogLevel::kOff) return;
    std::string msg = fmt::format(f, std::forward<Args>(args)...);
    if (level_ == DeviceLogLevel::kWarn && !IsWarning(msg)) return;
    std::string line = UtcTimestamp() + " device " + id_ + " " + msg + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }

 private:
  static bool IsWarning(const std::string& m) {
    for (const char* p : {"warning", "refused", "error", "coordinator error", "disconnected", "connect failed"})
      if (m.rfind(p, 0) == 0) return true;
    return false;
  }
  std::string id_;
  DeviceLogLevel level_;
};

}  // namespace fedrt::net
