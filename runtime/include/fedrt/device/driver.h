#pragma once
// The POSIX device driver's options (Linux boards): a driver of the client
// session (protocol/client_session.h) over TLS. It starts with the
// coordinator's address, its credentials and a state directory: the task
// arrives in Welcome, the device builds its local problem from it (and its
// agent index), answers TaskReply (or refuses with the reason), and then only
// moves the session's messages, gives it entropy for secure rounds and
// persists its state region before every update. Reconnects with exponential
// backoff and resubmits a pending update. fedrt::Device (fedrt/device.h) is
// the public face; these options add the hooks tests and benchmarks use.
// The driver's parts: device/session.h (the task and the rounds),
// device/connection.h (TLS, reconnects, frames). Host code
// (docs/architecture.md, "Layers").

#include <cstdint>
#include <functional>
#include <string>

#include "fedrt.pb.h"
#include "fedrt/core/status.h"
#include "fedrt/data/source.h"
#include "fedrt/device.h"
#include "fedrt/tls/tls.h"
#include "fedrt/problems/instance.h"

namespace fedrt::net {

// Writes raw bytes on the device's TLS session (a test plays a misbehaving client).
using RawWriter = std::function<Status(const std::string& bytes)>;

// Test and benchmark hooks; the fedrt-device command line exposes none.
struct DeviceHooks {
  // Called before each message the device sends (Update, TaskReply, SecAgg+, Heartbeat);
  // false: do not send it. It may sleep (a slow board) or write other bytes.
  std::function<bool(const wire::Envelope& message, const RawWriter& raw)> before_send;
  // Called after a message was sent; false: drop the connection now.
  std::function<bool(const wire::Envelope& message)> after_send;
  // A problem instance to use instead of building one from the task (many
  // devices in one process share it; not owned).
  const problems::Instance* instance = nullptr;
  // Workspace bytes the device offers a task (0: a Linux board's default, 1 GiB).
  size_t capacity = 0;
};

using DeviceLogLevel = fedrt::DeviceLogLevel;

struct DeviceOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  // Further addresses tried in turn after a failed connection (gateways, the
  // coordinator: docs/gateways.md); the device moves on only when a link fails.
  std::vector<std::pair<std::string, uint16_t>> fallbacks;
  std::string id;
  TlsClientCredentials credentials;
  std::string state_dir;      // keeps the session's state across restarts; empty = in memory only
  problems::DataFiles data;   // a task whose problem is read from files needs them here
  std::string own_data;       // --data: this device's own shard, for a task with own_data (docs/data.md)
  data::Source* source = nullptr;      // or the caller's examples for an own-data task (not owned)
  const UserModel* model = nullptr;    // a user-defined model ([model] kind = "user"; not owned)
  std::function<void(const RoundReport&)> progress;  // every settled round of this device
  long give_up_ms = 60000;    // exit with an error after this long without a connection
  bool heartbeats = true;     // offer heartbeats in Hello (sent at the interval Welcome asks for)
  bool quiet = false;         // no log lines (load driver)
  DeviceLogLevel log_level = DeviceLogLevel::kInfo;
  const DeviceHooks* hooks = nullptr;
};

// Runs until the coordinator's Shutdown (Ok), a refusal (the task, the
// identity, the protocol version), or give_up_ms without a connection.
Status RunDevice(const DeviceOptions& options);

// The driver's options for a public DeviceConfig (fedrt/device.h); errors
// name the config field ("coordinator: ...").
Status DeviceOptionsFromConfig(const DeviceConfig& config, DeviceOptions& out);
// "HOST:PORT" into its parts; false when it is not that.
bool ParseHostPort(const std::string& text, std::string* host, uint16_t* port);

}  // namespace fedrt::net
