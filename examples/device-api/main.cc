// A Linux-board program on the C++ device API (fedrt/device.h): builds a
// fedrt::Device from the coordinator's address, its PSK and its own CSV
// shard, prints each round it takes part in, and stops when the coordinator
// ends the experiment (or at Ctrl-C, through stop() from another thread).
//
//   fedrt-example-device-api HOST:PORT ID PSK_FILE SHARD.csv [STATE_DIR]
#include <csignal>
#include <cstdio>
#include <thread>

#include "fedrt/device.h"

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
}

int main(int argc, char** argv) {
  if (argc < 5 || argc > 6) {
    std::fprintf(stderr, "usage: %s HOST:PORT ID PSK_FILE SHARD.csv [STATE_DIR]\n", argv[0]);
    return 2;
  }
  fedrt::DeviceConfig config;
  config.coordinator = argv[1];
  config.id = argv[2];
  config.credentials.psk_file = argv[3];
  config.data = argv[4];
  if (argc == 6) config.state_dir = argv[5];
  config.log_level = fedrt::DeviceLogLevel::kWarn;  // the rounds are printed below

  auto device = fedrt::Device::Create(config);
  if (!device.ok()) {
    std::fprintf(stderr, "error: %s\n", device.status().message());
    return 2;
  }
  (*device)->on_progress([](const fedrt::RoundReport& r) {
    std::printf("%-8s run %u round %2u  %s  %3llu examples  loss %.4f -> %.4f  %u ms\n", r.algorithm.c_str(), r.run,
                r.round, r.included ? "included" : "dropped ", static_cast<unsigned long long>(r.examples),
                r.loss_before, r.loss_after, r.duration_ms);
    std::fflush(stdout);
  });

  // Ctrl-C: stop() from a watcher thread; run() returns once the round in hand is saved.
  std::signal(SIGINT, [](int) { g_interrupted = 1; });
  bool done = false;
  std::thread watcher([&] {
    while (!done && !g_interrupted) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (g_interrupted) (*device)->stop();
  });
  const fedrt::Status st = (*device)->run();
  done = true;
  watcher.join();
  if (st.code() == fedrt::StatusCode::kCancelled) {
    std::printf("stopped\n");
    return 0;
  }
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message());
    return 1;
  }
  std::printf("the coordinator ended the experiment\n");
  return 0;
}
