#pragma once
// fedrt-coordinator: the network driver of the server cores
// (algorithms/lsa.h LsaServer + IsSampled). One single-threaded Asio event
// loop serves every device over non-blocking mbedTLS sessions; per round it
// samples agents, announces theta_t, streams the validated updates into the
// server's O(d) accumulator, closes the round when every sampled device
// reported or, at the deadline, when a quorum did, persists the result to
// SQLite and only then tells the devices. With secure_aggregation = true each
// round is one SecAgg+ round (secagg/server.h, fedrt.proto "Secure
// aggregation") and the server only receives masked inputs and their sum:
// theta_{t+1} = theta_t + Delta S / m - clip. Host only.

#include <cstdint>
#include <functional>
#include <string>

#include "fedrt/core/status.h"
#include "fedrt/net/network_config.h"
#include "fedrt/sim/experiment.h"

namespace fedrt::net {

struct CoordinatorOptions {
  sim::ExperimentConfig experiment;
  NetworkConfig network;
  std::string out;        // --out DIR: metrics.csv, summary.json, error.png
  std::string port_file;  // written with the bound port once listening
  bool plot = true;
  // Test/bench hook: stop after this many rounds closed by this process (0 = never).
  long stop_after_rounds = 0;
  // Test hook (--secagg-dump FILE): appends every secure-aggregation message the
  // coordinator receives, one line "alg run round u body_case hex(Envelope)".
  std::string secagg_dump;
};

// Runs the experiment to completion (or until stop_after_rounds). Returns
// the first fatal error (bad keys, state db of another experiment, ...).
Status RunCoordinator(const CoordinatorOptions& options);

}  // namespace fedrt::net
