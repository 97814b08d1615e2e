#include "fedrt/log/log.h"

#include <mutex>

#include <spdlog/sinks/stdout_sinks.h>

namespace fedrt::log {

namespace {

std::mutex g_mu;
spdlog::level::level_enum g_level = spdlog::level::info;

}  // namespace

spdlog::logger& Get(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto existing = spdlog::get(name)) return *existing;
  auto logger = spdlog::stderr_logger_mt(name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %n %v", spdlog::pattern_time_type::utc);
  logger->set_level(g_level);
  logger->flush_on(spdlog::level::trace);
  return *logger;
}

Status SetLevel(const std::string& level) {
  const auto l = spdlog::level::from_str(level);
  if (l == spdlog::level::off && level != "off")
    return Status(StatusCode::kInvalidArgument,
                  "--log-level must be trace, debug, info, warn, error or off, got '" + level + "'");
  std::lock_guard<std::mutex> lock(g_mu);
  g_level = l;
  spdlog::apply_all([l](const std::shared_ptr<spdlog::logger>& lg) { lg->set_level(l); });
  return Status::Ok();
}

void AddLevelFlag(CLI::App& app, std::string& level) {
  app.add_option("--log-level", level, "log level: trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->default_val(level);
}

}  // namespace fedrt::log
