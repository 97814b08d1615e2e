// fedrt-device: one device of the fleet (POSIX, Linux boards). It needs only
// the coordinator's address, its credentials and a state directory: the task
// (algorithm, model, hyper-parameters, compression, secure aggregation)
// arrives from the coordinator, and the device builds its local problem from
// it and its agent index (runtime/include/fedrt/net/device.h).

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "fedrt/net/device_cli.h"

using namespace fedrt;

int main(int argc, char** argv) {
  CLI::App app{
      "fedrt-device: a federated device over TLS. Registers with the coordinator, receives its task (FedLSA, "
      "SCAFFLSA, FedAvg, Scaffold, FedProx, Fed-RR, FedEM, VR-FedEM; compression; secure aggregation), takes part "
      "in the rounds it is sampled in and keeps its state across restarts."};
  net::DeviceFlags flags;
  net::AddDeviceFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  net::DeviceOptions opt;
  Status st = net::DeviceOptionsFromFlags(flags, opt);
  if (st.ok()) st = net::RunDevice(opt);
  if (!st.ok()) {
    std::fprintf(stderr, "fedrt-device: error: %s\n", st.message());
    return 2;
  }
  return 0;
}
