#pragma once
// UTC timestamp of the coordinator's and device's log lines,
// "YYYY-MM-DDTHH:MM:SS.mmmZ" (ISO 8601, milliseconds). Host only.

#include <chrono>
#include <ctime>
#include <string>

#include <fmt/format.h>

namespace fedrt::net {

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

}  // namespace fedrt::net
