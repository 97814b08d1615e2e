#pragma once
// The coordinator's event log: one line per event on stderr,
// "TIME coordinator EVENT key=value ...". Host code.

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "fedrt/net/log_time.h"

namespace fedrt::net {

template <class... Args>
void CoordinatorLog(fmt::format_string<Args...> f, Args&&... args) {
  std::string line = UtcTimestamp() + " coordinator " + fmt::format(f, std::forward<Args>(args)...) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace fedrt::net
