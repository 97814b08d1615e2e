// fedrt-test-device: fedrt-device plus the faults the integration tests play
// (a slow board, a device that vanishes after its masked input, a board with
// little memory). Built with
// the tests only; the product's fedrt-device has none of these flags.

#include <chrono>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>

#include "fedrt/net/device_cli.h"

using namespace fedrt;

int main(int argc, char** argv) {
  CLI::App app{"fedrt-test-device: fedrt-device with test faults"};
  net::DeviceFlags flags;
  net::AddDeviceFlags(app, flags);
  long delay_ms = 0, drop_after_masked = -1;
  app.add_option("--delay-ms", delay_ms, "sleep before sending each update or SecAgg+ message (a slow board)");
  app.add_option("--drop-after-masked", drop_after_masked,
                 "drop the connection right after sending the masked input of secure round ROUND (0-based): a dropout");
  size_t capacity = 0;
  app.add_option("--capacity", capacity, "workspace bytes this device offers a task (a small board)");
  CLI11_PARSE(app, argc, argv);
  net::DeviceOptions opt;
  Status st = net::DeviceOptionsFromFlags(flags, opt);
  net::DeviceHooks hooks;
  hooks.before_send = [&](const wire::Envelope& m, const net::RawWriter&) {
    const bool round_message = m.body_case() == wire::Envelope::kUpdate || m.body_case() == wire::Envelope::kSecaggAdvertise ||
                               m.body_case() == wire::Envelope::kSecaggShares ||
                               m.body_case() == wire::Envelope::kSecaggMasked || m.body_case() == wire::Envelope::kSecaggUnmask;
    if (round_message && delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    return true;
  };
  hooks.after_send = [&](const wire::Envelope& m) {
    if (m.body_case() == wire::Envelope::kSecaggMasked && drop_after_masked >= 0 &&
        m.secagg_masked().round() == static_cast<uint32_t>(drop_after_masked)) {
      std::fprintf(stderr, "fedrt-test-device: dropped the connection after the masked input of round %ld\n",
                   drop_after_masked);
      return false;  // the device reconnects; the secure round counts it as dropped
    }
    return true;
  };
  hooks.capacity = capacity;
  opt.hooks = &hooks;
  if (st.ok()) st = net::RunDevice(opt);
  if (!st.ok()) {
    std::fprintf(stderr, "fedrt-test-device: error: %s\n", st.message());
    return 2;
  }
  return 0;
}
