// fedrt-device: one device of the fleet (POSIX). Builds agent c's local
// problem from the experiment file, authenticates to the coordinator with its
// PSK or certificate, takes part in rounds and keeps xi_c in --state.

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "fedrt/net/device.h"
#include "fedrt/net/network_config.h"

using namespace fedrt;

namespace {
int Fail(const std::string& what) {
  std::fprintf(stderr, "fedrt-device: error: %s\n", what.c_str());
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-device: a federated device over TLS"};
  std::string coordinator, id, key, cert, ca, config, state;
  long delay_ms = 0, give_up_ms = 60000;
  app.add_option("--coordinator", coordinator, "HOST:PORT of the coordinator")->required();
  app.add_option("--id", id, "device id (the PSK identity / certificate CN)")->required();
  app.add_option("--key", key, "PSK file (hex); with --cert: the device's private key (PEM)")->required();
  app.add_option("--cert", cert, "device certificate (PEM): mutual certificate authentication");
  app.add_option("--ca", ca, "CA certificate that signed the coordinator's certificate (with --cert)");
  app.add_option("--config", config, "TOML experiment file (the problem; same file as the coordinator)")->required();
  int agents = 0;
  app.add_option("--agents", agents, "number of agents N (overrides problem.agents; give the same to every process)");
  app.add_option("--state", state, "state file keeping xi_c across restarts (default: none)");
  app.add_option("--delay-ms", delay_ms, "sleep before sending each update or SecAgg+ message (simulates a slow board)");
  long drop_after_masked = -1;
  app.add_option("--test-drop-after-masked", drop_after_masked,
                 "tests: drop the connection after sending the secure-aggregation masked input of round t (0-based)");
  app.add_option("--give-up-ms", give_up_ms, "exit with an error after this long without a connection");
  CLI11_PARSE(app, argc, argv);

  net::DeviceOptions opt;
  const auto colon = coordinator.rfind(':');
  if (colon == std::string::npos) return Fail("--coordinator must be HOST:PORT, got '" + coordinator + "'");
  opt.host = coordinator.substr(0, colon);
  try {
    const long p = std::stol(coordinator.substr(colon + 1));
    if (p <= 0 || p > 65535) throw std::out_of_range("port");
    opt.port = static_cast<uint16_t>(p);
  } catch (const std::exception&) {
    return Fail("--coordinator: bad port in '" + coordinator + "'");
  }
  opt.id = id;
  Status st = sim::LoadExperimentToml(config, opt.experiment);
  if (!st.ok()) return Fail(st.message());
  if (app.count("--agents")) {
    opt.experiment.garnet.agents = agents;
    opt.experiment.agents_set = true;
  }
  st = sim::Validate(opt.experiment);
  if (!st.ok()) return Fail(st.message());
  opt.credentials.identity = id;
  if (!cert.empty()) {
    if (ca.empty()) return Fail("--cert needs --ca (the fleet CA certificate)");
    opt.credentials.cert_file = cert;
    opt.credentials.key_file = key;
    opt.credentials.ca_file = ca;
  } else {
    opt.credentials.psk_file = key;
  }
  opt.state_file = state;
  opt.delay_ms = delay_ms;
  opt.secagg_drop_after_masked_round = drop_after_masked;
  opt.give_up_ms = give_up_ms;
  st = net::RunDevice(opt);
  if (!st.ok()) return Fail(st.message());
  return 0;
}
