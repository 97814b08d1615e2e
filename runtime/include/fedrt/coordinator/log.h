#pragma once
// The coordinator's event log: one line per event through the "coordinator"
// logger (log/log.h), "TIME coordinator EVENT key=value ...". Refusals,
// rejections and failed rounds are warnings, a fatal error is an error, TLS
// peer lines are debug, everything else (rounds, phases, registrations) is
// info. Host code.

#include <utility>

#include <fmt/format.h>

#include "fedrt/log/log.h"

namespace fedrt::net {

template <class... Args>
void CoordinatorLog(fmt::format_string<Args...> f, Args&&... args) {
  log::Get("coordinator").info(fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void CoordinatorWarn(fmt::format_string<Args...> f, Args&&... args) {
  log::Get("coordinator").warn(fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void CoordinatorError(fmt::format_string<Args...> f, Args&&... args) {
  log::Get("coordinator").error(fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void CoordinatorDebug(fmt::format_string<Args...> f, Args&&... args) {
  log::Get("coordinator").debug(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace fedrt::net
