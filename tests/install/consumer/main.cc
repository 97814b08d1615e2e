// An out-of-tree program on the installed fedrt::Device (docs/device-api.md):
// a bad address is refused naming the field, a good configuration with a
// real PSK file (from the installed fedrt-keys) builds a device, and a device
// stopped before it runs returns kCancelled without connecting.
// Usage: consumer PSK_FILE
#include <cstdio>
#include <cstring>

#include "fedrt/device.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer PSK_FILE\n");
    return 2;
  }
  fedrt::DeviceConfig config;
  config.coordinator = "127.0.0.1";  // no port
  config.id = "dev0000";
  config.credentials.psk_file = argv[1];
  auto bad = fedrt::Device::Create(config);
  if (bad.ok() || std::strncmp(bad.status().message(), "coordinator:", 12) != 0) {
    std::fprintf(stderr, "FAIL: a coordinator without a port was not refused by name\n");
    return 1;
  }
  std::printf("refused: %s\n", bad.status().message());

  config.coordinator = "127.0.0.1:7000";
  config.log_level = fedrt::DeviceLogLevel::kOff;
  auto device = fedrt::Device::Create(config);
  if (!device.ok()) {
    std::fprintf(stderr, "FAIL: Create: %s\n", device.status().message());
    return 1;
  }
  (*device)->stop();
  const fedrt::Status st = (*device)->run();
  if (st.code() != fedrt::StatusCode::kCancelled) {
    std::fprintf(stderr, "FAIL: run() after stop() returned %s\n", st.message());
    return 1;
  }
  std::printf("device %s created; run() after stop(): cancelled\n", config.id.c_str());
  return 0;
}
