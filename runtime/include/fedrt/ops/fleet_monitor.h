#pragma once
// FleetMonitor: the operator's view of a running coordinator (docs/dashboard.md).
// The event loop writes to it (device registrations, round events through
// FleetEvents, refusals); the HTTP endpoint's threads read it as JSON
// (api/run, api/rounds, api/devices) and as Prometheus text (metrics). One
// mutex guards everything; a write costs a lock and a few stores, a read
// copies what it shows under the lock and renders after releasing it, so a
// client fetching a long history never holds up a round. Host code.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fedrt/ops/fleet_events.h"

namespace fedrt::net {

class FleetMonitor : public FleetEvents {
 public:
  // Where a device stands with its connection (the devices table's state
  // when no round involves it).
  enum class Link : uint8_t { kOffline, kRegistering, kConnected, kRefused, kRevoked, kDisconnected };

  // `run` holds the settings shown as they are (api/run); its "algorithms"
  // (names) and "rounds_total" are also used to label rounds.
  FleetMonitor(uint32_t agents, nlohmann::json run);

  void set_status(const std::string& status);  // waiting | running | finished | failed
  void set_address(const std::string& address);
  // A provisioned device (the registry, or a later `keys add`).
  void provisioned(uint32_t agent, const std::string& id);
  void link(uint32_t agent, Link link, const std::string& reason = "", const std::string& peer = "");
  void platform(uint32_t agent, const std::string& platform);
  // Gateways (docs/gateways.md): a device up behind one ("" when it left it
  // or connects here), a gateway's link with the number of devices
  // provisioned behind it, and whether it handed up the open round's aggregate.
  void via(uint32_t agent, const std::string& gateway);
  void gateway(const std::string& id, bool up, const std::string& peer, uint32_t provisioned);
  void gateway_handed_up(const std::string& id);
  void seen(uint32_t agent);  // a frame arrived from it
  // Refusals by reason, for the metrics.
  void handshake_failed(const std::string& reason);
  void frame_rejected(const std::string& reason);
  // The held-out accuracy of the round about to close (before its round_closed).
  void scored(double test_accuracy);
  // Rounds committed before this process started (a resumed state db).
  void history(const std::vector<RoundRecord>& rounds);

  // FleetEvents.
  void round_opened(const protocol::RoundId& id, uint32_t sampled) override;
  void announced(uint32_t agent) override;
  void submitted(uint32_t agent) override;
  void secagg_phase(int phase, uint32_t n) override;
  void secagg_answer(uint32_t agent) override;
  void traffic(uint32_t agent, uint64_t bytes_up, uint64_t bytes_down) override;
  void round_closed(const RoundRecord& record, double latency_ms) override;
  void privacy_spent(uint32_t algorithm, uint32_t run, double epsilon) override;

  // Renderings (thread-safe).
  std::string run_json() const;
  std::string rounds_json(size_t since) const;
  std::string devices_json() const;
  // [{id, state (up | down), peer, provisioned, devices_up, round (handed_up | waiting | none)}]
  std::string gateways_json() const;
  // {"run": run_json, "rounds": rounds_json(since), "devices": devices_json}, taken at one instant:
  // what the dashboard fetches once per poll.
  std::string live_json(size_t since) const;
  std::string metrics_text() const;  // Prometheus text exposition format 0.0.4

  static constexpr std::array<double, 14> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                             1.0,   2.5,  5.0,   10.0, 30.0, 60.0, 120.0};

 private:
  enum class Part : uint8_t { kNone, kSampled, kSubmitted, kDropped };
  struct Device {
    std::string id, platform, reason, peer, via;
    Link link = Link::kOffline;
    Part part = Part::kNone;
    double last_seen = -1.0;  // < 0: never
    double last_work_ms = -1.0;
    uint64_t rounds = 0, bytes_up = 0, bytes_down = 0, connections = 0;
  };
  struct Round {
    uint32_t algorithm = 0, run = 0, round = 0, agents = 0, sampled = 0;
    double error = 0, train_loss = 0, local_loss = 0, latency_ms = -1, closed_at = 0;
    uint64_t bits_up = 0, bits_down = 0;
    std::string closed_by, failure;
    double test_accuracy = -1;  // < 0: none
  };
  struct RoundsCopy {  // rounds [since, total) as they stood at one instant
    size_t since = 0, total = 0;
    std::vector<Round> rounds;
  };
  static const char* StateName(const Device& d);
  nlohmann::json round_json(size_t seq, const Round& r) const;
  // The caller holds mu_: the run's settings and status, and a copy of the rounds from `since`.
  nlohmann::json run_locked() const;
  RoundsCopy rounds_locked(size_t since) const;
  // Without mu_: the JSON of copies taken under it (name() and label() read only what the constructor set).
  nlohmann::json render_rounds(const RoundsCopy& c) const;
  static nlohmann::json render_devices(const std::vector<Device>& devices);
  std::string label(uint32_t round) const;
  std::string name(uint32_t algorithm) const;

  mutable std::mutex mu_;
  nlohmann::json run_;
  std::vector<std::string> names_;
  std::string status_ = "waiting", address_;
  double started_at_ = 0, finished_at_ = -1;
  std::vector<Device> devices_;
  struct Gateway {
    std::string id, peer;
    bool up = false, handed_up = false;
    uint32_t provisioned = 0;
  };
  std::vector<Gateway> gateways_;  // in the order they first connected
  nlohmann::json render_gateways() const;  // the caller holds mu_
  std::vector<Round> rounds_;
  // The open round.
  bool open_ = false;
  protocol::RoundId current_{};
  double opened_at_ = 0;
  uint32_t sampled_ = 0, submitted_ = 0;
  int phase_ = 0;  // SecAgg+ phase of the open round (0: none)
  uint32_t phase_n_ = 0, phase_answered_ = 0;
  double scored_ = -1;  // the closing round's held-out accuracy (< 0: none)
  // Counters (this process).
  uint64_t rounds_completed_ = 0, dropped_total_ = 0, bytes_up_ = 0, bytes_down_ = 0;
  std::map<std::string, uint64_t> handshake_failures_, rejected_frames_;
  std::map<std::pair<uint32_t, uint32_t>, double> last_error_;  // (algorithm, run) -> error after its last round
  std::map<std::pair<uint32_t, uint32_t>, double> epsilon_;     // (algorithm, run) -> DP-FedAvg's epsilon spent
  std::array<uint64_t, kLatencyBuckets.size()> latency_counts_{};  // cumulative at render time
  uint64_t latency_count_ = 0;
  double latency_sum_s_ = 0;
};

}  // namespace fedrt::net
