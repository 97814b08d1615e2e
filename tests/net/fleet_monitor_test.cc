// FleetMonitor (ops/fleet_monitor.h): the devices table follows the round
// events (sampled, submitted, dropped, refused, revoked), api/rounds pages
// by `since`, and /metrics counts what happened in the exposition format.
#include <cstring>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fedrt/ops/fleet_monitor.h"
#include "fedrt/coordinator/state_store.h"

namespace fedrt::net {
namespace {

using Link = FleetMonitor::Link;

nlohmann::json RunSettings() { return {{"algorithms", {"FedAvg", "Scaffold"}}, {"rounds_total", 4}}; }

std::map<std::string, std::string> States(const FleetMonitor& m) {
  std::map<std::string, std::string> out;
  const nlohmann::json all = nlohmann::json::parse(m.devices_json());
  for (const auto& d : all["devices"]) out[d["id"]] = d["state"];
  return out;
}

// The value of the metric line that starts with `name` (the whole series, labels included).
double Metric(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t at = ("\n" + text).find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size() - 1));
}

RoundRecord Closed(uint32_t round, std::vector<uint32_t> members) {
  RoundRecord r;
  r.algorithm = 1;
  r.round = round;
  r.agents = static_cast<uint32_t>(members.size());
  r.sampled = 3;
  r.error = 0.5 / (round + 1);
  r.closed_by = "deadline";
  for (uint32_t m : members) {
    MemberReport rep;
    rep.device = m;
    rep.duration_ms = 40 + m;
    r.reports.push_back(rep);
  }
  return r;
}

TEST(FleetMonitor, DevicesFollowTheRound) {
  FleetMonitor m(4, RunSettings());
  for (uint32_t a = 0; a < 3; ++a) m.provisioned(a, "dev" + std::to_string(a));  // agent 3: no key
  for (uint32_t a = 0; a < 3; ++a) m.link(a, Link::kRegistering, "", "127.0.0.1:9");
  EXPECT_EQ(States(m)["dev0"], "registering");
  for (uint32_t a = 0; a < 3; ++a) m.link(a, Link::kConnected);
  m.round_opened(protocol::RoundId{1, 0, 0}, 3);
  for (uint32_t a = 0; a < 3; ++a) m.announced(a);
  m.submitted(0);
  m.submitted(0);  // a second chunk's "whole" is not a second device
  m.submitted(1);
  auto s = States(m);
  EXPECT_EQ(s.size(), 3u);  // an agent without a key is not listed
  EXPECT_EQ(s["dev0"], "submitted");
  EXPECT_EQ(s["dev2"], "sampled");
  auto run = nlohmann::json::parse(m.run_json());
  EXPECT_EQ(run["current"]["algorithm"], "Scaffold");
  EXPECT_EQ(run["current"]["label"], "1");
  EXPECT_EQ(run["current"]["submitted"], 2);
  m.round_closed(Closed(0, {0, 1}), 120.0);
  s = States(m);
  EXPECT_EQ(s["dev0"], "connected");
  EXPECT_EQ(s["dev2"], "dropped");
  auto devices = nlohmann::json::parse(m.devices_json());
  EXPECT_EQ(devices["devices"][0]["rounds"], 1);
  EXPECT_EQ(devices["devices"][1]["last_work_ms"], 41);
  EXPECT_TRUE(devices["devices"][2]["last_work_ms"].is_null());
  EXPECT_EQ(devices["counts"]["dropped"], 1);
  m.link(1, Link::kRefused, "out of memory");
  m.link(2, Link::kRevoked, "lost");
  s = States(m);
  EXPECT_EQ(s["dev1"], "refused");
  EXPECT_EQ(s["dev2"], "revoked");
  run = nlohmann::json::parse(m.run_json());
  EXPECT_EQ(run["rounds_done"], 1);
  EXPECT_TRUE(run["current"].is_null());
}

TEST(FleetMonitor, RoundsPageBySinceAndKeepTheHistory) {
  FleetMonitor m(3, RunSettings());
  RoundRecord old = Closed(0, {0});
  old.algorithm = 0;
  m.history({old});  // committed before a restart: no latency known
  m.scored(0.75);  // the held-out accuracy of the round that closes next
  m.round_closed(Closed(0, {0, 1}), 10.0);
  m.round_closed(Closed(1, {0, 1, 2}), 30.0);
  auto all = nlohmann::json::parse(m.rounds_json(0));
  EXPECT_DOUBLE_EQ(all["rounds"][1]["test_accuracy"].get<double>(), 0.75);
  EXPECT_TRUE(all["rounds"][2]["test_accuracy"].is_null());
  ASSERT_EQ(all["total"], 3);
  EXPECT_TRUE(all["rounds"][0]["latency_ms"].is_null());
  EXPECT_EQ(all["rounds"][0]["algorithm"], "FedAvg");
  EXPECT_EQ(all["rounds"][2]["label"], "2");
  EXPECT_DOUBLE_EQ(all["rounds"][2]["latency_ms"].get<double>(), 30.0);
  auto tail = nlohmann::json::parse(m.rounds_json(2));
  ASSERT_EQ(tail["rounds"].size(), 1u);
  EXPECT_EQ(tail["rounds"][0]["seq"], 2);
  EXPECT_TRUE(nlohmann::json::parse(m.rounds_json(99))["rounds"].empty());
}

TEST(FleetMonitor, MetricsCountWhatHappened) {
  FleetMonitor m(3, RunSettings());
  for (uint32_t a = 0; a < 3; ++a) {
    m.provisioned(a, "dev" + std::to_string(a));
    m.link(a, Link::kConnected);
  }
  m.handshake_failed("bad_psk");
  m.handshake_failed("bad_psk");
  m.frame_rejected("not_sampled");
  m.round_opened(protocol::RoundId{1, 0, 0}, 3);
  for (uint32_t a = 0; a < 3; ++a) m.announced(a);
  m.traffic(0, 100, 2000);
  m.traffic(1, 50, 0);
  m.round_closed(Closed(0, {0, 1}), 7.0);     // 0.007 s: in le=0.01 and above
  m.round_closed(Closed(1, {0, 1, 2}), 300.0);  // 0.3 s: in le=0.5 and above
  const std::string t = m.metrics_text();
  EXPECT_EQ(Metric(t, "fedrt_rounds_completed_total"), 2);
  EXPECT_EQ(Metric(t, "fedrt_devices_connected"), 3);
  EXPECT_EQ(Metric(t, "fedrt_devices_dropped_total"), 1);
  EXPECT_EQ(Metric(t, "fedrt_handshake_failures_total{reason=\"bad_psk\"}"), 2);
  EXPECT_EQ(Metric(t, "fedrt_rejected_frames_total{reason=\"not_sampled\"}"), 1);
  EXPECT_EQ(Metric(t, "fedrt_bytes_up_total"), 150);
  EXPECT_EQ(Metric(t, "fedrt_bytes_down_total"), 2000);
  EXPECT_EQ(Metric(t, "fedrt_round_duration_seconds_bucket{le=\"0.005\"}"), 0);
  EXPECT_EQ(Metric(t, "fedrt_round_duration_seconds_bucket{le=\"0.01\"}"), 1);
  EXPECT_EQ(Metric(t, "fedrt_round_duration_seconds_bucket{le=\"0.25\"}"), 1);
  EXPECT_EQ(Metric(t, "fedrt_round_duration_seconds_bucket{le=\"0.5\"}"), 2);
  EXPECT_EQ(Metric(t, "fedrt_round_duration_seconds_bucket{le=\"+Inf\"}"), 2);
  EXPECT_EQ(Metric(t, "fedrt_round_duration_seconds_count"), 2);
  EXPECT_NEAR(Metric(t, "fedrt_round_duration_seconds_sum"), 0.307, 1e-12);
  EXPECT_EQ(Metric(t, "fedrt_round_error{algorithm=\"Scaffold\",run=\"0\"}"), 0.25);
  // Every sample line belongs to a family announced by # TYPE.
  std::istringstream in(t);
  std::set<std::string> typed;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) typed.insert(line.substr(7, line.find(' ', 7) - 7));
    if (line.empty() || line[0] == '#') continue;
    std::string family = line.substr(0, line.find_first_of("{ "));
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!typed.count(family) && family.size() > std::strlen(suffix) &&
          family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        family.resize(family.size() - std::strlen(suffix));
    EXPECT_TRUE(typed.count(family)) << line;
  }
}

}  // namespace
}  // namespace fedrt::net

namespace fedrt::net {
namespace {

// The dashboard's tree (docs/gateways.md): each device names the gateway it
// is up behind, each gateway its link, its devices up and whether it handed
// up the open round's aggregate; a gateway that goes down shows so.
TEST(FleetMonitor, GatewaysShowTheirDevicesAndTheirRound) {
  FleetMonitor m(4, RunSettings());
  for (uint32_t a = 0; a < 4; ++a) m.provisioned(a, "dev000" + std::to_string(a));
  EXPECT_EQ(nlohmann::json::parse(m.gateways_json()).size(), 0u);
  m.gateway("gw00", true, "10.0.0.7:5000", 2);
  for (uint32_t a : {0u, 2u}) {
    m.via(a, "gw00");
    m.link(a, FleetMonitor::Link::kConnected);
  }
  m.link(1, FleetMonitor::Link::kConnected);  // at the coordinator itself
  m.round_opened(protocol::RoundId{0, 0, 0}, 3);
  nlohmann::json g = nlohmann::json::parse(m.gateways_json());
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0]["id"], "gw00");
  EXPECT_EQ(g[0]["state"], "up");
  EXPECT_EQ(g[0]["peer"], "10.0.0.7:5000");
  EXPECT_EQ(g[0]["devices_up"], 2);
  EXPECT_EQ(g[0]["provisioned"], 2);
  EXPECT_EQ(g[0]["round"], "waiting");
  m.gateway_handed_up("gw00");
  EXPECT_EQ(nlohmann::json::parse(m.gateways_json())[0]["round"], "handed_up");
  const nlohmann::json live = nlohmann::json::parse(m.live_json(0));
  ASSERT_TRUE(live.contains("gateways"));
  EXPECT_EQ(live["gateways"][0]["round"], "handed_up");
  std::map<std::string, std::string> via;
  for (const auto& d : live["devices"]["devices"]) via[d["id"]] = d["via"];
  EXPECT_EQ(via["dev0000"], "gw00");
  EXPECT_EQ(via["dev0001"], "");
  m.round_opened(protocol::RoundId{0, 0, 1}, 3);
  EXPECT_EQ(nlohmann::json::parse(m.gateways_json())[0]["round"], "waiting");  // a new round: not yet
  m.gateway("gw00", false, "", 2);
  m.via(0, "");
  m.link(0, FleetMonitor::Link::kDisconnected);
  g = nlohmann::json::parse(m.gateways_json());
  EXPECT_EQ(g[0]["state"], "down");
  EXPECT_EQ(g[0]["peer"], "10.0.0.7:5000");  // where it was last
  EXPECT_EQ(g[0]["devices_up"], 1);
}

}  // namespace
}  // namespace fedrt::net
