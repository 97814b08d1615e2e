#pragma once
// DeviceClock: what the simulator's virtual clock knows of each agent
// (docs/async.md, "Virtual time"): its compute speed (samples per second),
// its link bandwidth, and when it is online. A round of local work of n
// samples on agent c takes
//   down_bytes 8 / (b_c 10^6) + n / v_c + up_bytes 8 / (b_c 10^6)   seconds.
// Draws are keyed by (seed, agent), so every driver that builds the clock of
// an experiment gets the same one. Host code: memory is O(N) (O(N + K) for
// a trace of K intervals), built once.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/config/devices.h"
#include "fedrt/core/status.h"

namespace fedrt::sim {

// The work a device clock charges for one round of `session`: the examples
// its local work read (local steps x batch), or the samples it drew where a
// family does not count examples.
template <class Session>
uint64_t ExamplesRead(const Session& session) {
  const uint64_t examples = session.report().examples;
  return examples > 0 ? examples : session.last_samples();
}

class DeviceClock {
 public:
  static constexpr double kDay = 86400.0;
  static constexpr double kNever = HUGE_VAL;

  // The clock of `agents` agents from [devices] (trace files are read here:
  // errors name the file and line).
  static Result<DeviceClock> Build(const config::DevicesSettings& devices, uint32_t agents, uint64_t seed);

  uint32_t agents() const { return static_cast<uint32_t>(speed_.size()); }
  double speed(uint32_t c) const { return speed_[c]; }
  double bandwidth_mbps(uint32_t c) const { return mbps_[c]; }
  // Seconds to move `bytes` over agent c's link, and to work `samples` samples.
  double transfer_s(uint32_t c, uint64_t bytes) const { return static_cast<double>(bytes) * 8.0 / (mbps_[c] * 1e6); }
  double compute_s(uint32_t c, uint64_t samples) const { return static_cast<double>(samples) / speed_[c]; }
  // One job: download `down` bytes, work `samples`, upload `up` bytes (the equation above).
  double job_s(uint32_t c, uint64_t down, uint64_t samples, uint64_t up) const {
    return transfer_s(c, down) + compute_s(c, samples) + transfer_s(c, up);
  }

  // Availability. online(c, t): agent c is online at t. online_until(c, t):
  // the end of the online interval holding t (kNever: online for good).
  // next_online(c, t): the first time >= t at which c is online (kNever: no more).
  bool online(uint32_t c, double t) const;
  double online_until(uint32_t c, double t) const;
  double next_online(uint32_t c, double t) const;
  // The earliest time > t at which some agent's availability changes (kNever: none).
  double next_change(double t) const;
  // Bytes the clock keeps (the benchmark's memory table).
  size_t bytes() const;

 private:
  enum class Mode : uint8_t { kAlways, kDiurnal, kTrace };
  double window_start(uint32_t c, double t, int later = 0) const;
  Mode mode_ = Mode::kAlways;
  std::vector<double> speed_, mbps_;
  std::vector<double> phase_, length_;     // diurnal: online [phase, phase + length) every day
  std::vector<uint32_t> first_;            // trace: agent c's intervals are [first_[c], first_[c + 1])
  std::vector<double> start_, end_;        // trace: sorted by agent, then start
  std::vector<double> changes_;            // trace: every start and end, sorted (next_change)
};

}  // namespace fedrt::sim
