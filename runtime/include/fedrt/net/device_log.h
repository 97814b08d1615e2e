#pragma once
// The POSIX device's log lines on stderr: "<UTC time> device <id> <event>",
// every event (info), only problems (warn: lines starting with warning,
// refused, error, coordinator error, disconnected, connect failed) or
// nothing. Host code.

#include <cstdio>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fedrt/device.h"
#include "fedrt/net/log_time.h"

namespace fedrt::net {

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
