#include "fedrt/net/network_config.h"

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
  static const std::set<std::string> kKeys = {"listen", "port", "keys", "state", "auth",
                                              "deadline_ms", "quorum", "start_timeout_ms", "http",
                                              "refusal_log_lines", "refusal_log_interval_ms",
                                              "max_connections", "max_handshakes"};
  for (auto& [k, v] : *t) {
    if (!kKeys.count(std::string(k.str())))
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: unknown key 'network.{}' (line {})", path, k.str(), v.source().begin.line));
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
  FEDRT_TRY(str("listen", net.listen, false));
  FEDRT_TRY(str("keys", net.keys, true));
  FEDRT_TRY(str("state", net.state, true));
  FEDRT_TRY(str("auth", net.auth, false));
  FEDRT_TRY(str("http", net.http, false));  // checked by the coordinator (net/http_endpoint.h)
  FEDRT_TRY(integer("port", net.port));
  FEDRT_TRY(integer("deadline_ms", net.deadline_ms));
  FEDRT_TRY(integer("start_timeout_ms", net.start_timeout_ms));
  FEDRT_TRY(integer("refusal_log_lines", net.refusal_log_lines));
  FEDRT_TRY(integer("refusal_log_interval_ms", net.refusal_log_interval_ms));
  FEDRT_TRY(integer("max_connections", net.max_connections));
  FEDRT_TRY(integer("max_handshakes", net.max_handshakes));
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
  if (!(n.quorum > 0.0 && n.quorum <= 1.0)) return bad(fmt::format("network.quorum must be in (0, 1], got {}", n.quorum));
  if (n.auth != "any" && n.auth != "psk" && n.auth != "cert")
    return bad(fmt::format("network.auth must be any, psk or cert, got '{}'", n.auth));
  return Status::Ok();
}

uint64_t ProblemFingerprint(const config::ExperimentConfig& c) {
  const auto& g = c.garnet;
  const std::string s = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(c.problem), c.problem == config::ProblemKind::kBundle
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
