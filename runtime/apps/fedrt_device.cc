// fedrt-device: one device of the fleet (POSIX, Linux boards), a command line
// over fedrt::Device (fedrt/device.h). It needs only the coordinator's
// address, its credentials and a state directory: the task (algorithm,
// model, hyper-parameters, compression, secure aggregation) arrives from the
// coordinator, and the device builds its local problem from it, its agent
// index and its --data shard.

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "fedrt/device.h"
#include "fedrt/cli/parse.h"
#include "fedrt/device/cli.h"

using namespace fedrt;

int main(int argc, char** argv) {
  CLI::App app{
      "fedrt-device: a federated device over TLS. Registers with the coordinator, receives its task (FedLSA, "
      "SCAFFLSA, FedAvg, Scaffold, FedProx, Fed-RR, FedEM, VR-FedEM; compression; secure aggregation), takes part "
      "in the rounds it is sampled in and keeps its state across restarts."};
  net::DeviceFlags flags;
  net::AddDeviceFlags(app, flags);
  if (int rc = 0; !cli::Parse(app, argc, argv, &rc)) return rc;
  // Flags, credentials and data that do not do are a usage error (2); a run
  // that fails (no coordinator, refused, the task not doable here) ends with 1.
  DeviceConfig config;
  Status st = net::DeviceConfigFromFlags(flags, config);
  bool started = false;
  if (st.ok()) {
    auto device = Device::Create(config);
    started = device.ok();
    st = device.ok() ? (*device)->run() : device.status();
  }
  if (!st.ok()) {
    std::fprintf(stderr, "fedrt-device: error: %s\n", st.message());
    return started ? cli::kRunFailed : cli::kUsageError;
  }
  return 0;
}
