#pragma once
// fedrt-device (POSIX): the network driver of the client cores
// (algorithms/lsa.h LsaClient). Connects over TLS, registers, runs the local
// steps of every round it is sampled in with the same RNG keys as the
// simulator's agent c (CounterRng(seed, run, c, round, kLocalSteps)), and
// keeps its stateful variables (xi_c per algorithm, the uncommitted update)
// in a state file across disconnections and restarts. Its local problem is
// built from the experiment file and its agent index, so no data crosses the
// network. Reconnects with exponential backoff. Under secure aggregation it
// runs SecAggDevice (secagg/device.h) on the integers of its rounding payload,
// with fresh secrets from mbedTLS CTR-DRBG every round. Host (Linux boards).

#include <cstdint>
#include <functional>
#include <string>

#include "fedrt/core/status.h"
#include "fedrt/net/tls.h"
#include "fedrt/problems/td_problem.h"
#include "fedrt/sim/experiment.h"
#include "fedrt.pb.h"

namespace fedrt::net {

struct DeviceOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string id;
  sim::ExperimentConfig experiment;
  TlsClientCredentials credentials;
  std::string state_file;   // xi_c and the pending update; empty = in memory only
  long delay_ms = 0;        // sleep before sending each update or SecAgg+ message (tests: slow boards)
  // Test hook: drop the connection right after sending the secure-aggregation
  // masked input of this round t (0-based; -1 = never), then reconnect.
  long secagg_drop_after_masked_round = -1;
  long give_up_ms = 60000;  // exit with an error after this long without a connection
  bool quiet = false;       // no log lines (load driver)
  // The problem, when the caller already built it (load driver: many devices
  // per process share one); otherwise built from `experiment`. Not owned.
  const problems::TdProblem* problem = nullptr;
  // Test hook, called before each update is sent: `raw` writes bytes on the
  // TLS session (a deliberately misbehaving client).
  std::function<void(const wire::Update& update, const std::function<Status(const std::string&)>& raw)>
      before_update;
  // Test hook, the same before each secure-aggregation message (fedrt.proto SecAgg*).
  std::function<void(const wire::Envelope& message, const std::function<Status(const std::string&)>& raw)>
      before_secagg;
};

// Runs until the coordinator says the experiment is over (Ok), a fatal
// refusal (identity, configuration), or give_up_ms without a connection.
Status RunDevice(const DeviceOptions& options);

}  // namespace fedrt::net
