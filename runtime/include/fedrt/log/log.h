#pragma once
// Host logging through spdlog: one line per event on stderr,
// "YYYY-MM-DDTHH:MM:SS.mmmZ NAME message" (UTC, milliseconds), flushed line
// by line so a supervising process reads it as it happens. Every host binary
// takes --log-level (docs/fleet.md, "Log lines"). Host code; the devices
// keep their own small logger.

#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "fedrt/core/status.h"

namespace fedrt::log {

// The logger NAME (created on first use, stderr, the format above).
spdlog::logger& Get(const std::string& name);

// Sets the level of every fedrt logger: trace, debug, info, warn, error or off.
Status SetLevel(const std::string& level);

// Registers --log-level on `app`, defaulting to `level`, checked against the names above.
void AddLevelFlag(CLI::App& app, std::string& level);

}  // namespace fedrt::log
