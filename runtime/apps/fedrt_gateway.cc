// fedrt-gateway: serves devices with the coordinator's protocol and hands the
// coordinator one aggregate of them per round (docs/gateways.md).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fedrt/cli/parse.h"
#include "fedrt/coordinator/serial_line.h"
#include "fedrt/gateway/gateway.h"
#include "fedrt/log/log.h"

int main(int argc, char** argv) {
  CLI::App app{"fedrt-gateway: a coordinator for its devices, one device of the coordinator: per round it forwards "
               "one aggregate of its devices' updates (docs/gateways.md)"};
  fedrt::net::GatewayOptions o;
  std::string coordinators, log_level = "info";
  app.add_option("--coordinator", coordinators,
                 "HOST:PORT[,HOST:PORT...]: the coordinator, then fallbacks, tried in turn when the link fails")
      ->required();
  app.add_option("--id", o.id, "this gateway's identity (KEYS/gateways.tsv, e.g. gw00)")->required();
  app.add_option("--keys", o.keys, "its folder from fedrt-keys gateways: gateway.psk, registry.tsv")->required();
  app.add_option("--listen", o.listen, "address its devices connect to (default 127.0.0.1)");
  app.add_option("--port", o.port, "port its devices connect to (default 7434; 0: any free port)")
      ->check(CLI::Range(0L, 65535L));
  app.add_option("--port-file", o.port_file, "write the bound port to this file once listening");
  app.add_option("--serial", o.serial,
                 "PATH[,BAUD]: a microcontroller on this serial line (repeatable, one device per line; BAUD default "
                 "115200, ignored by a pseudo-terminal)")
      ->check([](const std::string& v) {
        auto s = fedrt::net::ParseSerialLine(v);
        return s.ok() ? std::string() : std::string(s.status().message());
      });
  fedrt::log::AddLevelFlag(app, log_level);
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  (void)fedrt::log::SetLevel(log_level);
  for (size_t at = 0; at <= coordinators.size();) {
    const size_t comma = std::min(coordinators.find(',', at), coordinators.size());
    const std::string a = coordinators.substr(at, comma - at);
    if (a.find(':') == std::string::npos || a.back() == ':') {
      fmt::print(stderr, "fedrt-gateway: error: --coordinator '{}': expected HOST:PORT\n", a);
      return fedrt::cli::kUsageError;
    }
    o.coordinators.push_back(a);
    at = comma + 1;
  }
  const fedrt::Status st = fedrt::net::RunGateway(o);
  if (!st.ok()) {
    fmt::print(stderr, "fedrt-gateway: error: {}\n", st.message());
    return st.code() == fedrt::StatusCode::kInvalidArgument || st.code() == fedrt::StatusCode::kNotFound
               ? fedrt::cli::kUsageError
               : fedrt::cli::kRunFailed;
  }
  return 0;
}
