#pragma once
// fedrt::Device: the C++ device API for Linux boards (docs/device-api.md). A
// device object is built from the coordinator's address, its identity and
// TLS credentials, a state directory and its data (a shard file, or the
// caller's data::Source); the task (algorithm, model, hyper-parameters,
// compression, SecAgg+) arrives from the coordinator. run() takes part in
// rounds until the coordinator's Shutdown; run_one_round() returns after the
// device's next round settles; stop() ends either from another thread.
// fedrt-device is a command line over this class. Host code.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "fedrt/core/status.h"
#include "fedrt/data/source.h"

namespace fedrt {

// The device's small logger on stderr: every event, problems only, or nothing.
enum class DeviceLogLevel { kInfo, kWarn, kOff };

// TLS credentials (docs/architecture.md, "Wire"): a pre-shared key file
// (hex), or a certificate, its private key and the fleet CA (all PEM files).
// The identity is DeviceConfig::id.
struct DeviceCredentials {
  std::string psk_file;
  std::string cert_file, key_file, ca_file;
};

struct UserModel;  // fedrt/user_model.h

struct DeviceConfig {
  std::string coordinator;          // "HOST:PORT", or "HOST:PORT,HOST:PORT,...": fallbacks tried in turn
  std::string id;                   // device id: the PSK identity or the certificate's CN
  DeviceCredentials credentials;
  std::string state_dir;            // the session's state survives restarts there; empty = in memory only
  std::string data;                 // this device's shard (CSV with a header row, or a record file; docs/data.md)
  data::Source* source = nullptr;   // or the caller's examples (not owned; must outlive the device)
  const UserModel* model = nullptr; // a user-defined model for a task with [model] kind = "user" (not owned)
  DeviceLogLevel log_level = DeviceLogLevel::kInfo;
  long give_up_ms = 60000;          // run() fails after this long without a connection
};

// One settled round of this device: the WorkReport it sent with its update
// (protocol/messages.h) and whether the coordinator aggregated the update.
struct RoundReport {
  std::string algorithm;  // "fedavg", "scaffold-rr", ...
  uint32_t algorithm_index = 0, run = 0, round = 0;
  bool included = false;
  uint64_t examples = 0;        // examples the local work read (with repetition)
  double loss_before = 0.0;     // f_c at the broadcast model (own data; NaN otherwise)
  double loss_after = 0.0;      // f_c at the local model after the local steps
  uint32_t duration_ms = 0;     // wall time of the local work
};

class Device {
 public:
  // Checks `config` (errors name the field: "coordinator: ...", "data: ...")
  // and reads the TLS credentials; connects only in run().
  static Result<std::unique_ptr<Device>> Create(const DeviceConfig& config);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Takes part in rounds until the coordinator's Shutdown (Ok), stop()
  // (kCancelled), a refusal (the task, the identity, the protocol version)
  // or give_up_ms without a connection.
  Status run();
  // Takes part until the RoundResult of this device's next update (included
  // or dropped) and returns its report. kOutOfRange after the coordinator's
  // Shutdown, kCancelled after stop(), otherwise as run(). The connection
  // stays open between calls; the device is silent while no call runs, so a
  // coordinator with an idle timeout (network.idle_timeout_ms, 60 s by
  // default) closes it after that long, and the next call reconnects.
  Result<RoundReport> run_one_round();
  // Thread-safe: ends the run()/run_one_round() in progress and returns once
  // it has returned (local work in progress finishes first; its update is
  // persisted). Called while none runs, it makes the next one return at once.
  void stop();
  // `callback` receives every settled round's report, on the thread that
  // runs the device. Set it before run().
  void on_progress(std::function<void(const RoundReport&)> callback);

  struct Impl;

 private:
  explicit Device(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fedrt
