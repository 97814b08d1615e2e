#pragma once
// The command line of a POSIX device (fedrt-device and the tests' device
// program share it): coordinator address, identity, credentials, state
// directory, data files, into a fedrt::Device config (fedrt/device.h). Host code.

#include <string>

#include <CLI/CLI.hpp>

#include "fedrt/core/status.h"
#include "fedrt/device/driver.h"

namespace fedrt::net {

struct DeviceFlags {
  std::string coordinator, id, key, cert, ca, state, data;
  std::string log_level = "info";
  long give_up_ms = 60000;
};

// Registers the device's flags on `app`.
void AddDeviceFlags(CLI::App& app, DeviceFlags& flags);
// Checks the flags and fills the public device config; the message names the flag.
Status DeviceConfigFromFlags(const DeviceFlags& flags, DeviceConfig& out);
// The same into the driver's options (the tests' device adds hooks to them).
Status DeviceOptionsFromFlags(const DeviceFlags& flags, DeviceOptions& out);

}  // namespace fedrt::net
