#include "fedrt/device/cli.h"

#include <filesystem>

#include <fmt/format.h>

namespace fedrt::net {

void AddDeviceFlags(CLI::App& app, DeviceFlags& f) {
  app.add_option("--coordinator", f.coordinator,
                 "HOST:PORT of the coordinator (or a gateway); HOST:PORT,HOST:PORT,...: fallbacks tried in turn when "
                 "a connection fails")
      ->required();
  app.add_option("--id", f.id, "device id (the PSK identity / certificate CN)")->required();
  app.add_option("--key", f.key, "PSK file (hex); with --cert: the device's private key (PEM)")->required();
  app.add_option("--cert", f.cert, "device certificate (PEM): mutual certificate authentication");
  app.add_option("--ca", f.ca, "CA certificate that signed the coordinator's certificate (with --cert)");
  app.add_option("--state", f.state,
                 "state directory: the device's control variates, compression memory and pending update survive "
                 "restarts there (default: none, state in memory only)");
  app.add_option("--data", f.data,
                 "this device's own data: its shard (CSV with a header row, or a record file) for a task with [data] "
                 "(docs/data.md); or the files of a problem read from files (array bundle, problem.data CSV). "
                 "Default: the task generates the data");
  app.add_option("--give-up-ms", f.give_up_ms, "exit with an error after this long without a connection");
  app.add_option("--log-level", f.log_level, "info (every event), warn (problems only) or off")
      ->check(CLI::IsMember({"info", "warn", "off"}))
      ->default_val(f.log_level);
}

Status DeviceConfigFromFlags(const DeviceFlags& f, DeviceConfig& c) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  for (size_t at = 0; at <= f.coordinator.size();) {
    const size_t comma = std::min(f.coordinator.find(',', at), f.coordinator.size());
    const std::string one = f.coordinator.substr(at, comma - at);
    std::string host;
    uint16_t port = 0;
    if (one.rfind(':') == std::string::npos) return bad("--coordinator must be HOST:PORT, got '" + one + "'");
    if (!ParseHostPort(one, &host, &port)) return bad("--coordinator: bad port in '" + one + "'");
    at = comma + 1;
  }
  c.coordinator = f.coordinator;
  c.id = f.id;
  c.credentials = {};
  std::error_code ec;
  // Files named by the flags the user typed (DeviceOptionsFromConfig checks them again under the API's field names).
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--key", f.key}, {"--cert", f.cert},
                                   {"--ca", f.ca}})
    if (!path.empty() && !std::filesystem::exists(path, ec)) return bad(fmt::format("{}: '{}' not found", flag, path));
  if (!f.cert.empty()) {
    if (f.ca.empty()) return bad("--cert needs --ca (the fleet CA certificate)");
    c.credentials.cert_file = f.cert;
    c.credentials.key_file = f.key;
    c.credentials.ca_file = f.ca;
  } else {
    c.credentials.psk_file = f.key;
  }
  c.state_dir = f.state;
  if (!f.data.empty() && !std::filesystem::exists(f.data, ec)) return bad(fmt::format("--data: '{}' not found", f.data));
  c.data = f.data;
  if (f.give_up_ms <= 0) return bad(fmt::format("--give-up-ms must be positive, got {}", f.give_up_ms));
  c.give_up_ms = f.give_up_ms;
  c.log_level = f.log_level == "off" ? DeviceLogLevel::kOff
                : f.log_level == "warn" ? DeviceLogLevel::kWarn : DeviceLogLevel::kInfo;
  return Status::Ok();
}

Status DeviceOptionsFromFlags(const DeviceFlags& f, DeviceOptions& opt) {
  DeviceConfig c;
  FEDRT_TRY(DeviceConfigFromFlags(f, c));
  return DeviceOptionsFromConfig(c, opt);
}

}  // namespace fedrt::net
