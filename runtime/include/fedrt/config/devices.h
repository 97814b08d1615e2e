#pragma once
// Devices that come and go (docs/async.md): the [algorithm] keys of buffered
// asynchronous aggregation (FedBuff) and the [devices] table of the
// simulator's virtual clock (each agent's compute speed, link bandwidth and
// availability). Absent, every run is what it was without them.

#include <cstdint>
#include <string>

#include "fedrt/core/status.h"

namespace fedrt::config {

// [algorithm] mode, buffer, concurrency, max_staleness, staleness_exponent.
struct AsyncSettings {
  std::string mode = "sync";        // sync | async
  long buffer = 10;                 // K: a server step every K updates
  long concurrency = 100;           // devices training at once
  long max_staleness = 20;          // updates staler than this are dropped
  double staleness_exponent = 0.5;  // a: an update of staleness s is weighted (1 + s)^-a
  bool keys_given = false;          // any of the four numbers was in the file
  bool async() const { return mode == "async"; }
};

// A per-device quantity drawn once per agent: a constant, lognormal
// exp(mu + sigma Z) or uniform on [low, high).
struct Distribution {
  enum class Kind : uint8_t { kConstant, kLognormal, kUniform };
  Kind kind = Kind::kConstant;
  double value = 1.0;          // kConstant
  double mu = 0, sigma = 0;    // kLognormal
  double low = 0, high = 0;    // kUniform
};

// [devices]: the virtual clock's inputs (sim/device_clock.h).
struct DevicesSettings {
  bool present = false;        // the table was given: the simulator keeps virtual time
  Distribution speed;          // samples per second of local work
  Distribution bandwidth_mbps{Distribution::Kind::kConstant, 10.0};  // both directions, megabits per second
  std::string availability = "always";  // always | diurnal | a CSV trace (device, start_s, end_s)
  std::string profiles;        // optional CSV (device, speed, bandwidth_mbps): replaces the two draws
  double online_hours = 8.0;   // diurnal: mean hours online per day
  double deadline_s = 0;       // synchronous rounds: late devices are dropped after this (0: none)
  bool availability_is_file() const { return availability != "always" && availability != "diurnal"; }
};

struct ExperimentConfig;
// The async keys against the rest of the experiment: ranges (buffer >= 1,
// concurrency >= buffer, ...) and what buffered aggregation runs, each
// message naming the key (runtime/src/config/devices_settings.cc).
Status ValidateAsyncDevices(const ExperimentConfig& config);

}  // namespace fedrt::config
