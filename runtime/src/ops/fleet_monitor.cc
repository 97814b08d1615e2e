#include "fedrt/ops/fleet_monitor.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "fedrt/ops/round_record.h"

namespace fedrt::net {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const char* PhaseName(int phase) {
  static const char* const kNames[] = {"", "advertise", "shares", "masked", "check", "unmask"};
  return phase >= 1 && phase <= 5 ? kNames[phase] : "";
}

// A label value of the text exposition format: \ " and newline escaped.
std::string LabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

nlohmann::json Optional(double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

}  // namespace

FleetMonitor::FleetMonitor(uint32_t agents, nlohmann::json run) : run_(std::move(run)), devices_(agents) {
  started_at_ = Now();
  if (run_.contains("algorithms"))
    for (const auto& n : run_["algorithms"]) names_.push_back(n.get<std::string>());
}

void FleetMonitor::set_status(const std::string& status) {
  std::lock_guard<std::mutex> l(mu_);
  status_ = status;
  if (status == "finished" || status == "failed") finished_at_ = Now();
}

void FleetMonitor::set_address(const std::string& address) {
  std::lock_guard<std::mutex> l(mu_);
  address_ = address;
}

void FleetMonitor::provisioned(uint32_t agent, const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  if (agent < devices_.size()) devices_[agent].id = id;
}

void FleetMonitor::link(uint32_t agent, Link link, const std::string& reason, const std::string& peer) {
  std::lock_guard<std::mutex> l(mu_);
  if (agent >= devices_.size()) return;
  Device& d = devices_[agent];
  if (link == Link::kRegistering) ++d.connections;
  if (link != Link::kConnected && link != Link::kDisconnected) d.part = Part::kNone;  // a sampled device that left: dropped
  d.link = link;
  d.reason = reason;
  if (!peer.empty()) d.peer = peer;
  d.last_seen = Now();
}

void FleetMonitor::platform(uint32_t agent, const std::string& platform) {
  std::lock_guard<std::mutex> l(mu_);
  if (agent < devices_.size()) devices_[agent].platform = platform;
}

void FleetMonitor::via(uint32_t agent, const std::string& gateway) {
  std::lock_guard<std::mutex> l(mu_);
  if (agent < devices_.size()) devices_[agent].via = gateway;
}

void FleetMonitor::gateway(const std::string& id, bool up, const std::string& peer, uint32_t provisioned) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = std::find_if(gateways_.begin(), gateways_.end(), [&](const Gateway& g) { return g.id == id; });
  if (it == gateways_.end()) it = gateways_.insert(gateways_.end(), Gateway{id, "", false, false, 0});
  it->up = up;
  if (!peer.empty()) it->peer = peer;
  it->provisioned = provisioned;
}

void FleetMonitor::gateway_handed_up(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  for (Gateway& g : gateways_)
    if (g.id == id) g.handed_up = true;
}

nlohmann::json FleetMonitor::render_gateways() const {
  nlohmann::json list = nlohmann::json::array();
  for (const Gateway& g : gateways_) {
    uint32_t up = 0;
    for (const Device& d : devices_) up += d.via == g.id && d.link == Link::kConnected ? 1 : 0;
    list.push_back({{"id", g.id}, {"state", g.up ? "up" : "down"}, {"peer", g.peer}, {"provisioned", g.provisioned},
                    {"devices_up", up}, {"round", !open_ ? "none" : g.handed_up ? "handed_up" : "waiting"}});
  }
  return list;
}

std::string FleetMonitor::gateways_json() const {
  std::lock_guard<std::mutex> l(mu_);
  return render_gateways().dump();
}

void FleetMonitor::seen(uint32_t agent) {
  const double now = Now();
  std::lock_guard<std::mutex> l(mu_);
  if (agent < devices_.size()) devices_[agent].last_seen = now;
}

void FleetMonitor::handshake_failed(const std::string& reason) {
  std::lock_guard<std::mutex> l(mu_);
  ++handshake_failures_[reason];
}

void FleetMonitor::frame_rejected(const std::string& reason) {
  std::lock_guard<std::mutex> l(mu_);
  ++rejected_frames_[reason];
}

void FleetMonitor::scored(double test_accuracy) {
  std::lock_guard<std::mutex> l(mu_);
  scored_ = std::isfinite(test_accuracy) ? test_accuracy : -1.0;
}

void FleetMonitor::history(const std::vector<RoundRecord>& rounds) {
  std::lock_guard<std::mutex> l(mu_);
  for (const RoundRecord& r : rounds) {
    rounds_.push_back(Round{r.algorithm, r.run, r.round, r.agents, r.sampled, r.error, r.train_loss, r.local_loss, -1.0,
                            r.closed_at, r.bits_up, r.bits_down, r.closed_by, r.failure});
    if (r.round != protocol::kInitRound) last_error_[{r.algorithm, r.run}] = r.error;
  }
}

void FleetMonitor::round_opened(const protocol::RoundId& id, uint32_t sampled) {
  std::lock_guard<std::mutex> l(mu_);
  open_ = true;
  current_ = id;
  opened_at_ = Now();
  sampled_ = sampled;
  submitted_ = 0;
  phase_ = 0;
  status_ = "running";
  for (Device& d : devices_)
    if (d.part != Part::kDropped) d.part = Part::kNone;
  for (Gateway& g : gateways_) g.handed_up = false;
}

void FleetMonitor::announced(uint32_t agent) {
  std::lock_guard<std::mutex> l(mu_);
  if (agent < devices_.size()) devices_[agent].part = Part::kSampled;
}

void FleetMonitor::submitted(uint32_t agent) {
  std::lock_guard<std::mutex> l(mu_);
  if (agent >= devices_.size() || devices_[agent].part == Part::kSubmitted) return;
  devices_[agent].part = Part::kSubmitted;
  ++submitted_;
}

void FleetMonitor::secagg_phase(int phase, uint32_t n) {
  std::lock_guard<std::mutex> l(mu_);
  phase_ = phase;
  phase_n_ = n;
  phase_answered_ = 0;
}

void FleetMonitor::secagg_answer(uint32_t) {
  std::lock_guard<std::mutex> l(mu_);
  ++phase_answered_;
}

void FleetMonitor::traffic(uint32_t agent, uint64_t up, uint64_t down) {
  std::lock_guard<std::mutex> l(mu_);
  bytes_up_ += up;
  bytes_down_ += down;
  if (agent < devices_.size()) {
    devices_[agent].bytes_up += up;
    devices_[agent].bytes_down += down;
  }
}

void FleetMonitor::round_closed(const RoundRecord& r, double latency_ms) {
  std::lock_guard<std::mutex> l(mu_);
  rounds_.push_back(Round{r.algorithm, r.run, r.round, r.agents, r.sampled, r.error, r.train_loss, r.local_loss,
                          latency_ms, r.closed_at, r.bits_up, r.bits_down, r.closed_by, r.failure, scored_});
  scored_ = -1;
  if (r.round != protocol::kInitRound) last_error_[{r.algorithm, r.run}] = r.error;
  ++rounds_completed_;
  const double s = latency_ms / 1000.0;
  for (size_t b = 0; b < kLatencyBuckets.size(); ++b)
    if (s <= kLatencyBuckets[b]) ++latency_counts_[b];
  ++latency_count_;
  latency_sum_s_ += s;
  std::vector<char> member(devices_.size(), 0);
  for (const MemberReport& m : r.reports) {
    if (m.device >= devices_.size()) continue;
    member[m.device] = 1;
    Device& d = devices_[m.device];
    ++d.rounds;
    d.last_work_ms = m.duration_ms;
    d.part = Part::kNone;
  }
  for (size_t a = 0; a < devices_.size(); ++a) {
    Device& d = devices_[a];
    if (member[a] || (d.part != Part::kSampled && d.part != Part::kSubmitted)) continue;
    d.part = Part::kDropped;  // called on, not aggregated
    ++dropped_total_;
  }
  open_ = false;
  phase_ = 0;
}

const char* FleetMonitor::StateName(const Device& d) {
  switch (d.link) {
    case Link::kOffline: return "offline";
    case Link::kRegistering: return "registering";
    case Link::kRefused: return "refused";
    case Link::kRevoked: return "revoked";
    case Link::kDisconnected: return d.part == Part::kSampled ? "dropped" : "disconnected";
    case Link::kConnected: break;
  }
  switch (d.part) {
    case Part::kSampled: return "sampled";
    case Part::kSubmitted: return "submitted";
    case Part::kDropped: return "dropped";
    case Part::kNone: break;
  }
  return "connected";
}

std::string FleetMonitor::label(uint32_t round) const {
  return round == protocol::kInitRound ? std::string("init") : std::to_string(round + 1);
}

std::string FleetMonitor::name(uint32_t algorithm) const {
  return algorithm < names_.size() ? names_[algorithm] : fmt::format("algorithm {}", algorithm);
}

nlohmann::json FleetMonitor::round_json(size_t seq, const Round& r) const {
  const bool init = r.round == protocol::kInitRound;
  return {{"seq", seq}, {"algorithm", name(r.algorithm)}, {"run", r.run},
          {"round", init ? -1 : static_cast<int64_t>(r.round)}, {"label", label(r.round)},
          {"agents", r.agents}, {"sampled", r.sampled}, {"error", r.error}, {"train_loss", r.train_loss},
          {"local_loss", r.local_loss}, {"test_accuracy", Optional(r.test_accuracy)}, {"latency_ms", Optional(r.latency_ms)},
          {"closed_by", r.closed_by}, {"failure", r.failure}, {"bits_up", r.bits_up}, {"bits_down", r.bits_down},
          {"closed_at", r.closed_at}};
}

// Each rendering copies the state it shows under mu_ (a memberwise copy of the rounds asked for
// and of the devices) and builds and writes the JSON after releasing it: the event loop's round
// events take mu_ too, and must not wait for a long history to be rendered.
std::string FleetMonitor::run_json() const {
  std::unique_lock<std::mutex> l(mu_);
  const nlohmann::json j = run_locked();
  l.unlock();
  return j.dump();
}

std::string FleetMonitor::rounds_json(size_t since) const {
  std::unique_lock<std::mutex> l(mu_);
  const RoundsCopy rounds = rounds_locked(since);
  l.unlock();
  return render_rounds(rounds).dump();
}

std::string FleetMonitor::devices_json() const {
  std::unique_lock<std::mutex> l(mu_);
  const std::vector<Device> devices = devices_;
  l.unlock();
  return render_devices(devices).dump();
}

std::string FleetMonitor::live_json(size_t since) const {
  std::unique_lock<std::mutex> l(mu_);
  nlohmann::json run = run_locked();
  const RoundsCopy rounds = rounds_locked(since);
  const std::vector<Device> devices = devices_;
  nlohmann::json gateways = render_gateways();
  l.unlock();
  return nlohmann::json{{"run", std::move(run)},
                        {"rounds", render_rounds(rounds)},
                        {"devices", render_devices(devices)},
                        {"gateways", std::move(gateways)}}
      .dump();
}

nlohmann::json FleetMonitor::run_locked() const {
  nlohmann::json j = run_;
  j["status"] = status_;
  j["address"] = address_;
  j["started_at"] = started_at_;
  j["finished_at"] = Optional(finished_at_);
  j["now"] = Now();
  j["rounds_done"] = rounds_.size();
  if (!epsilon_.empty()) {  // central DP-FedAvg: epsilon spent per algorithm and run (docs/privacy.md)
    nlohmann::json eps = nlohmann::json::array();
    for (const auto& [k, e] : epsilon_) eps.push_back({{"algorithm", name(k.first)}, {"run", k.second}, {"epsilon", e}});
    j["epsilon"] = std::move(eps);
  }
  j["current"] = nullptr;
  j["secagg"] = nullptr;
  if (open_) {
    j["current"] = {{"algorithm", name(current_.algorithm)}, {"run", current_.run},
                    {"round", current_.round == protocol::kInitRound ? -1 : static_cast<int64_t>(current_.round)},
                    {"label", label(current_.round)}, {"opened_at", opened_at_}, {"sampled", sampled_},
                    {"submitted", submitted_}};
    if (phase_ > 0) j["secagg"] = {{"phase", PhaseName(phase_)}, {"answered", phase_answered_}, {"n", phase_n_}};
  }
  return j;
}

FleetMonitor::RoundsCopy FleetMonitor::rounds_locked(size_t since) const {
  RoundsCopy c{std::min(since, rounds_.size()), rounds_.size(), {}};
  c.rounds.assign(rounds_.begin() + static_cast<std::ptrdiff_t>(c.since), rounds_.end());
  return c;
}

nlohmann::json FleetMonitor::render_rounds(const RoundsCopy& c) const {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < c.rounds.size(); ++i) list.push_back(round_json(c.since + i, c.rounds[i]));
  return nlohmann::json{{"total", c.total}, {"rounds", std::move(list)}};
}

nlohmann::json FleetMonitor::render_devices(const std::vector<Device>& devices) {
  nlohmann::json list = nlohmann::json::array();
  std::map<std::string, uint64_t> counts = {{"offline", 0},  {"registering", 0}, {"connected", 0},
                                            {"sampled", 0},  {"submitted", 0},   {"dropped", 0},
                                            {"refused", 0},  {"revoked", 0},     {"disconnected", 0}};
  for (size_t a = 0; a < devices.size(); ++a) {
    const Device& d = devices[a];
    if (d.id.empty()) continue;  // an agent no key is provisioned for
    const char* state = StateName(d);
    ++counts[state];
    list.push_back({{"id", d.id}, {"index", a}, {"platform", d.platform}, {"state", state}, {"reason", d.reason},
                    {"peer", d.peer}, {"via", d.via}, {"last_seen", Optional(d.last_seen)}, {"rounds", d.rounds},
                    {"bytes_up", d.bytes_up}, {"bytes_down", d.bytes_down}, {"last_work_ms", Optional(d.last_work_ms)},
                    {"connections", d.connections}});
  }
  return nlohmann::json{{"devices", std::move(list)}, {"counts", counts}};
}

std::string FleetMonitor::metrics_text() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  metric("fedrt_rounds_completed_total", "counter", "Rounds this coordinator process closed and committed.");
  out += fmt::format("fedrt_rounds_completed_total {}\n", rounds_completed_);
  metric("fedrt_rounds_done", "gauge", "Rounds of the schedule committed to the state db (including a resumed run's).");
  out += fmt::format("fedrt_rounds_done {}\n", rounds_.size());
  uint64_t connected = 0, sampled = 0;
  std::map<std::string, uint64_t> by_state;
  for (const Device& d : devices_) {
    if (d.id.empty()) continue;
    const std::string s = StateName(d);
    ++by_state[s];
    if (d.link == Link::kConnected) ++connected;
    if (d.link == Link::kConnected && (d.part == Part::kSampled || d.part == Part::kSubmitted)) ++sampled;
  }
  metric("fedrt_devices_connected", "gauge", "Devices connected that accepted the task.");
  out += fmt::format("fedrt_devices_connected {}\n", connected);
  metric("fedrt_devices_sampled", "gauge", "Connected devices called on by the open round.");
  out += fmt::format("fedrt_devices_sampled {}\n", open_ ? sampled : 0);
  metric("fedrt_devices", "gauge", "Provisioned devices by state (the dashboard's devices table).");
  for (const auto& [s, n] : by_state) out += fmt::format("fedrt_devices{{state=\"{}\"}} {}\n", s, n);
  metric("fedrt_devices_dropped_total", "counter", "Devices called on by a round that closed without their update.");
  out += fmt::format("fedrt_devices_dropped_total {}\n", dropped_total_);
  metric("fedrt_handshake_failures_total", "counter", "Connections refused before registration, by reason.");
  for (const auto& [r, n] : handshake_failures_)
    out += fmt::format("fedrt_handshake_failures_total{{reason=\"{}\"}} {}\n", LabelValue(r), n);
  metric("fedrt_rejected_frames_total", "counter", "Device messages rejected, by reason.");
  for (const auto& [r, n] : rejected_frames_)
    out += fmt::format("fedrt_rejected_frames_total{{reason=\"{}\"}} {}\n", LabelValue(r), n);
  metric("fedrt_bytes_up_total", "counter", "Round traffic received from devices, frame bytes.");
  out += fmt::format("fedrt_bytes_up_total {}\n", bytes_up_);
  metric("fedrt_bytes_down_total", "counter", "Round traffic sent to devices, frame bytes.");
  out += fmt::format("fedrt_bytes_down_total {}\n", bytes_down_);
  metric("fedrt_round_duration_seconds", "histogram", "Time from a round's opening to its commit.");
  for (size_t b = 0; b < kLatencyBuckets.size(); ++b)
    out += fmt::format("fedrt_round_duration_seconds_bucket{{le=\"{}\"}} {}\n", kLatencyBuckets[b], latency_counts_[b]);
  out += fmt::format("fedrt_round_duration_seconds_bucket{{le=\"+Inf\"}} {}\n", latency_count_);
  out += fmt::format("fedrt_round_duration_seconds_sum {}\n", latency_sum_s_);
  out += fmt::format("fedrt_round_duration_seconds_count {}\n", latency_count_);
  metric("fedrt_round_error", "gauge", "The error metric after the last committed round, per algorithm and run.");
  for (const auto& [k, e] : last_error_)
    if (std::isfinite(e))
      out += fmt::format("fedrt_round_error{{algorithm=\"{}\",run=\"{}\"}} {}\n", LabelValue(name(k.first)), k.second, e);
  if (!epsilon_.empty()) {
    metric("fedrt_privacy_epsilon", "gauge",
           "Central DP-FedAvg: epsilon spent (at the run's delta, classic conversion) after the last committed round, "
           "per algorithm and run.");
    for (const auto& [k, e] : epsilon_)
      out += fmt::format("fedrt_privacy_epsilon{{algorithm=\"{}\",run=\"{}\"}} {}\n", LabelValue(name(k.first)),
                         k.second, e);
  }
  return out;
}

void FleetMonitor::privacy_spent(uint32_t algorithm, uint32_t run, double epsilon) {
  std::lock_guard<std::mutex> l(mu_);
  epsilon_[{algorithm, run}] = epsilon;
}

}  // namespace fedrt::net
