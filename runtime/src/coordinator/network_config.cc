#include "fedrt/coordinator/network_config.h"
#include "fedrt/core/closest_name.h"
#include "fedrt/coordinator/serial_line.h"

#include <arpa/inet.h>

#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace fedrt::net {

Status LoadNetworkToml(const std::string& path, NetworkConfig& net) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& err) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}:{}: {}", path, err.source().begin.line, err.description()));
  }
  const toml::table* t = root["network"].as_table();
  if (t == nullptr) return Status::Ok();
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  static const std::set<std::string> kKeys = {"listen", "port", "keys", "state", "auth", "psk_forward_secrecy", "tls_min_version",
                                              "deadline_ms", "quorum", "start_timeout_ms", "http",
                                              "refusal_log_lines", "refusal_log_interval_ms",
                                              "max_connections", "max_handshakes", "peer_connections_per_s",
                                              "peer_connection_burst", "rate_limit_exempt", "tcp_keepalive_s",
                                              "idle_timeout_ms", "http_linger_s", "max_output_bytes",
                                              "device_messages_per_s", "device_message_burst", "serial"};
  for (auto& [k, v] : *t) {
    if (!kKeys.count(std::string(k.str()))) {
      const std::string near = ClosestName(std::string(k.str()), kKeys);
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: unknown key 'network.{}' (line {}){}", path, k.str(), v.source().begin.line,
                                near.empty() ? "" : fmt::format("; did you mean 'network.{}'?", near)));
    }
  }
  auto wrong = [&](const char* key, const char* type) {
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: 'network.{}' must be {}", path, key, type));
  };
  auto str = [&](const char* key, std::string& out, bool is_path) -> Status {
    if (!t->contains(key)) return Status::Ok();
    auto v = (*t)[key].value<std::string>();
    if (!v) return wrong(key, "a string");
    out = *v;
    if (is_path && !out.empty() && std::filesystem::path(out).is_relative()) out = (base / out).string();
    return Status::Ok();
  };
  auto integer = [&](const char* key, long& out) -> Status {
    if (!t->contains(key)) return Status::Ok();
    auto v = (*t)[key].value<int64_t>();
    if (!v || !(*t)[key].is_integer()) return wrong(key, "an integer");
    out = static_cast<long>(*v);
    return Status::Ok();
  };
  if (t->contains("psk_forward_secrecy")) {
    auto v = (*t)["psk_forward_secrecy"].value<bool>();
    if (!v || !(*t)["psk_forward_secrecy"].is_boolean()) return wrong("psk_forward_secrecy", "true or false");
    net.psk_forward_secrecy = *v;
  }
  FEDRT_TRY(str("listen", net.listen, false));
  FEDRT_TRY(str("keys", net.keys, true));
  FEDRT_TRY(str("state", net.state, true));
  FEDRT_TRY(str("auth", net.auth, false));
  FEDRT_TRY(str("tls_min_version", net.tls_min_version, false));
  FEDRT_TRY(str("http", net.http, false));  // checked by the coordinator (ops/http_endpoint.h)
  FEDRT_TRY(integer("port", net.port));
  FEDRT_TRY(integer("deadline_ms", net.deadline_ms));
  FEDRT_TRY(integer("start_timeout_ms", net.start_timeout_ms));
  FEDRT_TRY(integer("refusal_log_lines", net.refusal_log_lines));
  FEDRT_TRY(integer("refusal_log_interval_ms", net.refusal_log_interval_ms));
  FEDRT_TRY(integer("max_connections", net.max_connections));
  FEDRT_TRY(integer("max_handshakes", net.max_handshakes));
  FEDRT_TRY(integer("peer_connections_per_s", net.peer_connections_per_s));
  FEDRT_TRY(integer("peer_connection_burst", net.peer_connection_burst));
  FEDRT_TRY(integer("tcp_keepalive_s", net.tcp_keepalive_s));
  FEDRT_TRY(integer("idle_timeout_ms", net.idle_timeout_ms));
  FEDRT_TRY(integer("http_linger_s", net.http_linger_s));
  FEDRT_TRY(integer("max_output_bytes", net.max_output_bytes));
  FEDRT_TRY(integer("device_messages_per_s", net.device_messages_per_s));
  FEDRT_TRY(integer("device_message_burst", net.device_message_burst));
  if (t->contains("rate_limit_exempt")) {
    const toml::array* a = (*t)["rate_limit_exempt"].as_array();
    if (a == nullptr) return wrong("rate_limit_exempt", "an array of addresses or ADDRESS/PREFIX networks");
    net.rate_limit_exempt.clear();
    for (const auto& e : *a) {
      auto v = e.value<std::string>();
      if (!v || !e.is_string()) return wrong("rate_limit_exempt", "an array of strings");
      net.rate_limit_exempt.push_back(*v);
    }
  }
  if (t->contains("serial")) {
    const toml::array* a = (*t)["serial"].as_array();
    if (a == nullptr) return wrong("serial", "an array of \"PATH[,BAUD]\" strings");
    net.serial.clear();
    for (const auto& e : *a) {
      auto v = e.value<std::string>();
      if (!v || !e.is_string()) return wrong("serial", "an array of \"PATH[,BAUD]\" strings");
      net.serial.push_back(*v);
    }
  }
  if (t->contains("quorum")) {
    auto v = (*t)["quorum"].value<double>();
    if (!v) return wrong("quorum", "a number");
    net.quorum = *v;
  }
  return ValidateNetwork(net);
}

Status ValidateNetwork(const NetworkConfig& n) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  if (n.port < 0 || n.port > 65535) return bad(fmt::format("network.port must be in 0..65535, got {}", n.port));
  if (n.http_linger_s < 0 || n.http_linger_s > 7 * 86400)
    return bad(fmt::format("network.http_linger_s (--http-linger) must be in 0..604800 seconds, got {}", n.http_linger_s));
  if (n.http_linger_s > 0 && n.http.empty())
    return bad("network.http_linger_s (--http-linger) keeps the dashboard up: it needs network.http (--http)");
  {
    in6_addr a6{};
    in_addr a4{};
    if (inet_pton(AF_INET, n.listen.c_str(), &a4) != 1 && inet_pton(AF_INET6, n.listen.c_str(), &a6) != 1)
      return bad(fmt::format("network.listen (--listen) must be an IPv4 or IPv6 address, got '{}'{}", n.listen,
                             n.listen.find(':') != std::string::npos && n.listen.find('.') != std::string::npos
                                 ? " (the port is network.port, --port)"
                                 : ""));
  }
  if (n.tls_min_version != "1.2" && n.tls_min_version != "1.3")
    return bad(fmt::format("network.tls_min_version must be \"1.2\" or \"1.3\", got '{}'", n.tls_min_version));
  if (n.deadline_ms <= 0) return bad(fmt::format("network.deadline_ms must be positive, got {}", n.deadline_ms));
  if (n.start_timeout_ms < 0)
    return bad(fmt::format("network.start_timeout_ms must be >= 0, got {}", n.start_timeout_ms));
  if (n.refusal_log_lines < 0 || n.refusal_log_lines > 1000000)
    return bad(fmt::format("network.refusal_log_lines must be in 0..1000000, got {}", n.refusal_log_lines));
  if (n.refusal_log_interval_ms <= 0)
    return bad(fmt::format("network.refusal_log_interval_ms must be positive, got {}", n.refusal_log_interval_ms));
  if (n.max_connections < 0)
    return bad(fmt::format("network.max_connections must be >= 0 (0: the open-file limit), got {}", n.max_connections));
  if (n.max_handshakes <= 0)
    return bad(fmt::format("network.max_handshakes must be positive, got {}", n.max_handshakes));
  if (n.peer_connections_per_s < 0)
    return bad(fmt::format("network.peer_connections_per_s must be >= 0 (0: no limit), got {}", n.peer_connections_per_s));
  if (n.peer_connection_burst < 1)
    return bad(fmt::format("network.peer_connection_burst must be at least 1, got {}", n.peer_connection_burst));
  for (const auto& e : n.rate_limit_exempt) {
    auto net = ParseExemptNetwork(e);
    if (!net.ok()) return bad(fmt::format("network.rate_limit_exempt: {}", net.status().message()));
  }
  std::set<std::string> lines;
  for (const auto& e : n.serial) {
    auto line = ParseSerialLine(e);
    if (!line.ok()) return bad(fmt::format("network.serial (--serial) {}", line.status().message()));
    if (!lines.insert(line->path).second)
      return bad(fmt::format("network.serial (--serial) names {} twice: one device per line", line->path));
  }
  if (n.tcp_keepalive_s < 0 || n.tcp_keepalive_s > 86400)
    return bad(fmt::format("network.tcp_keepalive_s must be in 0..86400 (0: off), got {}", n.tcp_keepalive_s));
  if (n.idle_timeout_ms != 0 && (n.idle_timeout_ms < 1000 || n.idle_timeout_ms > 86400000))
    return bad(fmt::format("network.idle_timeout_ms must be 0 (off) or in 1000..86400000, got {}", n.idle_timeout_ms));
  if (n.max_output_bytes != 0 && n.max_output_bytes < 65536)
    return bad(fmt::format("network.max_output_bytes must be 0 (no cap) or at least 65536, got {}", n.max_output_bytes));
  if (n.device_messages_per_s < 0)
    return bad(fmt::format("network.device_messages_per_s must be >= 0 (0: no limit), got {}", n.device_messages_per_s));
  if (n.device_message_burst < 1)
    return bad(fmt::format("network.device_message_burst must be at least 1, got {}", n.device_message_burst));
  if (!(n.quorum > 0.0 && n.quorum <= 1.0)) return bad(fmt::format("network.quorum must be in (0, 1], got {}", n.quorum));
  if (n.auth != "any" && n.auth != "psk" && n.auth != "cert")
    return bad(fmt::format("network.auth must be any, psk or cert, got '{}'", n.auth));
  return Status::Ok();
}

Result<ExemptNetwork> ParseExemptNetwork(const std::string& entry) {
  const auto slash = entry.find('/');
  const std::string addr = entry.substr(0, slash);
  ExemptNetwork n;
  if (inet_pton(AF_INET, addr.c_str(), n.bytes.data()) == 1) {
    n.size = 4;
  } else if (inet_pton(AF_INET6, addr.c_str(), n.bytes.data()) == 1) {
    n.size = 16;
  } else {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("'{}' is not an IP address or ADDRESS/PREFIX network", entry));
  }
  const unsigned max = static_cast<unsigned>(n.size * 8);
  n.prefix = max;
  if (slash != std::string::npos) {
    const std::string p = entry.substr(slash + 1);
    const bool digits = !p.empty() && p.size() <= 3 && p.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoul(p) > max)
      return Status(StatusCode::kInvalidArgument, fmt::format("'{}': the prefix length must be 0..{}", entry, max));
    n.prefix = static_cast<unsigned>(std::stoul(p));
  }
  return n;
}

uint64_t ProblemFingerprint(const config::ExperimentConfig& c) {
  const auto& g = c.garnet;
  const std::string s = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(c.problem), c.problem == task::ProblemKind::kBundle
                                                                                   ? std::filesystem::path(c.problem_file).filename().string()
                                                                                   : std::string(),
      g.agents, static_cast<int>(g.heterogeneity), g.n_states, g.n_actions, g.branching, g.dim, g.gamma, g.epsilon,
      c.effective_problem_seed(), c.noise_free);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace fedrt::net
