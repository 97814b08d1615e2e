// A fleet of devices in one process, each a fedrt::Device that trains the
// two-layer network of model.h on its own CSV shard (docs/user-models.md).
// Device 0 prints its rounds; every device's run ends when the coordinator
// ends the experiment.
//
//   fedrt-example-user-model HOST:PORT KEYS_DIR SHARD_PATTERN DEVICES
//
// SHARD_PATTERN names device i's shard with {id} (shards/device-{id}.csv);
// KEYS_DIR is what fedrt-keys wrote (device i: devices/devNNNN/device.psk).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fedrt/device.h"
#include "model.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s HOST:PORT KEYS_DIR SHARD_PATTERN DEVICES\n", argv[0]);
    return 2;
  }
  const std::string coordinator = argv[1], keys = argv[2], pattern = argv[3];
  const int devices = std::atoi(argv[4]);
  const fedrt::UserModel model = two_layer::Model();  // shared: LossAndGrad keeps no state

  std::vector<std::unique_ptr<fedrt::Device>> fleet;
  for (int i = 0; i < devices; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "dev%04d", i);
    fedrt::DeviceConfig c;
    c.coordinator = coordinator;
    c.id = id;
    c.credentials.psk_file = keys + "/devices/" + id + "/device.psk";
    std::string shard = pattern;
    shard.replace(shard.find("{id}"), 4, std::to_string(i));
    c.data = shard;
    c.model = &model;
    c.log_level = fedrt::DeviceLogLevel::kWarn;
    auto d = fedrt::Device::Create(c);
    if (!d.ok()) {
      std::fprintf(stderr, "device %s: %s\n", id, d.status().message());
      return 2;
    }
    fleet.push_back(d.take());
  }
  fleet[0]->on_progress([](const fedrt::RoundReport& r) {
    std::printf("device 0  %-10s round %2u  f_0 %.4f -> %.4f\n", r.algorithm.c_str(), r.round, r.loss_before,
                r.loss_after);
    std::fflush(stdout);
  });
  std::vector<fedrt::Status> status(fleet.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < fleet.size(); ++i) threads.emplace_back([&, i] { status[i] = fleet[i]->run(); });
  for (auto& t : threads) t.join();
  int failed = 0;
  for (size_t i = 0; i < fleet.size(); ++i) {
    if (status[i].ok()) continue;
    std::fprintf(stderr, "device %zu: %s\n", i, status[i].message());
    ++failed;
  }
  std::printf("%zu devices finished, %d failed\n", fleet.size(), failed);
  return failed == 0 ? 0 : 1;
}
