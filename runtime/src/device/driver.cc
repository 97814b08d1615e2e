#include "fedrt/device/driver.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "fedrt/device/connection.h"
#include "fedrt/device/log.h"
#include "fedrt/device/session.h"

namespace fedrt::net {

Status RunDevice(const DeviceOptions& options) {
  DeviceLog log(options.id, options.log_level, options.quiet);
  DeviceSession session(options, log);
  DeviceConnection connection(options, log, session);
  FEDRT_TRY(connection.init());
  FEDRT_TRY(session.init());
  const std::atomic<bool> never{false};
  PumpEnd end = PumpEnd::kShutdown;
  return connection.pump(/*until_round=*/false, never, &end);
}

bool ParseHostPort(const std::string& text, std::string* host, uint16_t* port) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string p = text.substr(colon + 1);
  char* end = nullptr;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v <= 0 || v > 65535) return false;
  *host = text.substr(0, colon);
  *port = static_cast<uint16_t>(v);
  return true;
}

Status DeviceOptionsFromConfig(const DeviceConfig& c, DeviceOptions& opt) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  opt.fallbacks.clear();
  for (size_t at = 0, k = 0; at <= c.coordinator.size(); ++k) {  // HOST:PORT[,HOST:PORT...]: the first, then fallbacks
    const size_t comma = std::min(c.coordinator.find(',', at), c.coordinator.size());
    const std::string one = c.coordinator.substr(at, comma - at);
    std::string host;
    uint16_t port = 0;
    if (!ParseHostPort(one, &host, &port))
      return bad(fmt::format("coordinator: expected HOST:PORT[,HOST:PORT...] (port 1..65535), got '{}'", c.coordinator));
    if (k == 0) {
      opt.host = host;
      opt.port = port;
    } else {
      opt.fallbacks.emplace_back(host, port);
    }
    at = comma + 1;
  }
  if (c.id.empty()) return bad("id: empty (the device id is its PSK identity or certificate CN)");
  if (c.id.size() > 63) return bad(fmt::format("id: '{}' is longer than 63 characters", c.id));
  opt.id = c.id;
  opt.credentials = {};
  opt.credentials.identity = c.id;
  const DeviceCredentials& k = c.credentials;
  std::error_code ec;
  auto exists = [&ec](const std::string& p) { return std::filesystem::exists(p, ec); };
  if (!k.psk_file.empty() && !k.cert_file.empty())
    return bad("credentials: give either psk_file or cert_file/key_file/ca_file, not both");
  if (!k.psk_file.empty()) {
    if (!exists(k.psk_file)) return bad(fmt::format("credentials.psk_file: '{}' not found", k.psk_file));
    opt.credentials.psk_file = k.psk_file;
  } else if (!k.cert_file.empty()) {
    if (k.key_file.empty()) return bad("credentials.key_file: empty (the private key of cert_file)");
    if (k.ca_file.empty()) return bad("credentials.ca_file: empty (the fleet CA certificate)");
    for (const auto& [name, path] : {std::pair<const char*, const std::string&>{"cert_file", k.cert_file},
                                     {"key_file", k.key_file}, {"ca_file", k.ca_file}})
      if (!exists(path)) return bad(fmt::format("credentials.{}: '{}' not found", name, path));
    opt.credentials.cert_file = k.cert_file;
    opt.credentials.key_file = k.key_file;
    opt.credentials.ca_file = k.ca_file;
  } else {
    return bad("credentials: none given (psk_file, or cert_file with key_file and ca_file)");
  }
  opt.state_dir = c.state_dir;
  if (!c.data.empty() && c.source != nullptr) return bad("data: give a shard path or a source, not both");
  if (!c.data.empty()) {
    if (!exists(c.data)) return bad(fmt::format("data: '{}' not found", c.data));
    opt.own_data = c.data;  // an own-data task reads it as this device's shard
    const bool csv = std::filesystem::is_directory(c.data, ec) ||
                     (c.data.size() > 4 && c.data.substr(c.data.size() - 4) == ".csv");
    if (csv) opt.data.csv = c.data;
    else opt.data.bundle = c.data;
  }
  if (c.source != nullptr && c.source->count() == 0) return bad("source: no examples");
  opt.source = c.source;
  opt.model = c.model;
  if (c.give_up_ms <= 0) return bad(fmt::format("give_up_ms: must be positive, got {}", c.give_up_ms));
  opt.give_up_ms = c.give_up_ms;
  opt.log_level = c.log_level;
  return Status::Ok();
}

}  // namespace fedrt::net
