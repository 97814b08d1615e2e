#include "fedrt/coordinator/view.h"

#include <filesystem>

#include <fmt/format.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509.h>

#include "fedrt/task/names.h"

namespace fedrt::net {

namespace {

// A file as the operator named it: relative to the coordinator's working
// directory when it lies below it (the page shows no more of the machine).
std::string Shown(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) return path;
  const std::filesystem::path rel = std::filesystem::path(path).lexically_proximate(cwd);
  const std::string r = rel.generic_string();
  return r.compare(0, 2, "..") == 0 ? path : r;
}

}  // namespace

nlohmann::json DashboardRun(const std::string& name, const task::Task& task, const config::ExperimentConfig& cfg,
                            const NetworkConfig& net, const std::vector<std::string>& algorithms,
                            const std::string& error_metric) {
  const task::HyperSpec& h = task.hyper;
  const compression::QuantizerSpec& q = task.compression.quantizer;
  std::string uplink = task::QuantizerName(q.kind);
  if (q.kind == compression::QuantizerKind::kDither) uplink += fmt::format(" (s = {})", q.levels);
  if (q.kind == compression::QuantizerKind::kRounding) uplink += fmt::format(" ({} bits, clip {})", q.bits, q.clip);
  if (task.compression.control_variates) uplink += ", DIANA memory";
  nlohmann::json settings = {{"participation", task.participation},
                             {"step", h.step},
                             {"seed", task.seed},
                             {"uplink", uplink},
                             {"problem_seed", task.problem.seed},
                             {"start_timeout_ms", net.start_timeout_ms},
                             {"state", Shown(net.state)}};
  if (h.batch > 0) settings["batch"] = h.batch;
  if (task.secagg.enabled) settings["secagg_neighbours"] = task.secagg.neighbours;
  if (!cfg.data.train.empty()) settings["data"] = Shown(cfg.data.train);
  if (!cfg.data.test.empty()) settings["test"] = Shown(cfg.data.test);
  nlohmann::json privacy = nullptr;
  if (cfg.privacy.on())  // the guarantee's settings; the epsilon spent comes with each round (ops/fleet_monitor.h)
    privacy = {{"mechanism", cfg.privacy.mechanism},
               {"clip", cfg.privacy.clip},
               {"noise_multiplier", cfg.privacy.noise_multiplier},
               {"delta", cfg.privacy.delta},
               {"epsilon_budget", cfg.privacy.epsilon_budget ? nlohmann::json(*cfg.privacy.epsilon_budget) : nullptr},
               {"private", !cfg.privacy.test_seed.has_value()}};
  return {{"experiment", name},
          {"problem", task::ProblemKindName(task.problem.kind)},
          {"agents", task.problem.agents},
          {"dim", task.problem.dim},
          {"algorithms", algorithms},
          {"runs", task.runs},
          {"rounds_per_run", task.rounds},
          {"rounds_total", static_cast<uint64_t>(task.rounds) * task.runs * algorithms.size()},
          {"local_steps", h.local_steps},
          {"secagg_enabled", task.secagg.enabled},
          {"auth", net.auth},
          {"deadline_ms", net.deadline_ms},
          {"quorum", net.quorum},
          {"error_metric", error_metric},
          {"privacy", privacy},
          {"settings", settings}};
}

std::string HandshakeFailureLabel(int rc) {
  switch (rc) {
    case MBEDTLS_ERR_SSL_UNKNOWN_IDENTITY: return "unknown_psk_identity";
    case MBEDTLS_ERR_SSL_HANDSHAKE_FAILURE:  // TLS 1.3: the PSK binder does not verify
    case MBEDTLS_ERR_SSL_INVALID_MAC: return "bad_psk";
    case MBEDTLS_ERR_SSL_INVALID_RECORD: return "not_tls";
    case MBEDTLS_ERR_X509_CERT_VERIFY_FAILED: return "bad_certificate";
    case MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE: return "no_credentials";
    case MBEDTLS_ERR_SSL_CONN_EOF:
    case MBEDTLS_ERR_NET_CONN_RESET: return "eof";
    default: return "other";
  }
}

}  // namespace fedrt::net
