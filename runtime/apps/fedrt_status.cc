// fedrt-status: what a coordinator's state file says about its run, whether
// the coordinator is up or down (docs/fleet.md, "A run's state"): the
// experiment, per algorithm and run the rounds committed and the last one,
// the totals, the devices with their part in the rounds, the revoked ones.
// Opens the file read-only (fedrt/coordinator/state_store.h).
//
// Exit codes: 0 printed, 1 the file is missing or not a readable state
// database, 2 bad command line.

#include <cmath>
#include <ctime>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fedrt/coordinator/state_store.h"
#include "fedrt/cli/parse.h"
#include "fedrt/protocol/messages.h"

namespace {

using fedrt::net::RoundRecord;
using Json = nlohmann::ordered_json;

// meta 'experiment': "task=<hex>;algorithms=fedavg,scaffold".
struct Experiment {
  std::string identity, task;
  std::vector<std::string> algorithms;
};

Experiment ParseExperiment(const std::string& identity) {
  Experiment e;
  e.identity = identity;
  size_t start = 0;
  while (start <= identity.size() && !identity.empty()) {
    size_t end = identity.find(';', start);
    if (end == std::string::npos) end = identity.size();
    const std::string part = identity.substr(start, end - start);
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key == "task") e.task = value;
    if (key == "algorithms")
      for (size_t a = 0; a <= value.size() && !value.empty();) {
        size_t comma = value.find(',', a);
        if (comma == std::string::npos) comma = value.size();
        e.algorithms.push_back(value.substr(a, comma - a));
        a = comma + 1;
      }
    start = end + 1;
  }
  return e;
}

std::string AlgorithmName(const Experiment& e, uint32_t a) {
  return a < e.algorithms.size() ? e.algorithms[a] : fmt::format("#{}", a);
}

// The round as the coordinator's log and metrics.csv number it: t + 1, and 0
// for FedEM's initial exchange.
uint64_t Shown(uint32_t round) { return round == fedrt::protocol::kInitRound ? 0 : uint64_t{round} + 1; }

std::string LocalTime(double t) {
  if (t <= 0) return "-";
  const std::time_t s = static_cast<std::time_t>(t);
  std::tm tm{};
  localtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Ago(double t, double now) {
  if (t <= 0) return "";
  const double d = now - t;
  if (d < -1) return " (in the future: check the clocks)";
  if (d < 5) return " (just now)";
  if (d < 60) return fmt::format(" ({:.0f} s ago)", std::floor(d));
  if (d < 120 * 60) return fmt::format(" ({:.0f} min ago)", std::floor(d / 60));
  if (d < 48 * 3600) return fmt::format(" ({:.0f} h ago)", std::floor(d / 3600));
  return fmt::format(" ({:.0f} days ago)", std::floor(d / 86400));
}

std::string When(double t, double now) { return LocalTime(t) + Ago(t, now); }

std::string Bytes(uint64_t b) {
  if (b < 1000) return fmt::format("{} B", b);
  const char* units[] = {"kB", "MB", "GB", "TB"};
  double v = static_cast<double>(b);
  int u = -1;
  while (v >= 1000 && u < 3) v /= 1000, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string Num(double x) { return std::isnan(x) ? "-" : fmt::format("{:.6g}", x); }
Json NumJson(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

// Columns padded to their widest cell; `right` columns are numbers.
void PrintTable(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                const std::set<size_t>& right) {
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) w[c] = head[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t c = 0; c < r.size(); ++c) {
      const bool last = c + 1 == r.size();
      if (right.count(c)) s += fmt::format("  {:>{}}", r[c], w[c]);
      else s += last ? "  " + r[c] : fmt::format("  {:<{}}", r[c], w[c]);
    }
    fmt::print("{}\n", s);
  };
  line(head);
  for (const auto& r : rows) line(r);
}

struct Run {
  uint32_t algorithm = 0, run = 0;
  uint64_t rounds = 0;  // committed, the initial exchange not counted
  bool initial_exchange = false;
  RoundRecord last;     // the latest round (the initial exchange if it is the only one)
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-status: the state of a fleet run from the coordinator's SQLite file (read-only; the "
               "coordinator may be running or stopped)"};
  std::string path;
  bool json = false;
  double now = 0;
  app.add_option("--state", path, "the coordinator's state file (its --state / network.state)")->required();
  app.add_flag("--json", json, "one JSON object for tools instead of text");
  app.add_option("--now", now, "the time the ages are counted from, in unix seconds (default: now)");
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  if (now <= 0)
    now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto fail = [](const fedrt::Status& st, int rc = fedrt::cli::kRunFailed) {
    fmt::print(stderr, "fedrt-status: error: {}\n", st.message());
    return rc;
  };

  auto opened = fedrt::net::StateStore::OpenReadOnly(path);
  std::error_code ec;  // a --state that names no file is a usage error (docs/cli.md, "Exit codes")
  if (!opened.ok())
    return fail(opened.status(), std::filesystem::exists(path, ec) ? fedrt::cli::kRunFailed : fedrt::cli::kUsageError);
  fedrt::net::StateStore& store = **opened;
  auto identity = store.experiment();
  if (!identity.ok()) return fail(identity.status());
  const Experiment exp = ParseExperiment(*identity);
  auto rounds = store.load_rounds(fedrt::net::kNoVectors);
  if (!rounds.ok()) return fail(rounds.status());
  auto devices = store.load_devices();
  if (!devices.ok()) return fail(devices.status());
  auto members = store.member_totals();
  if (!members.ok()) return fail(members.status());
  auto revoked = store.load_revocations();
  if (!revoked.ok()) return fail(revoked.status());

  std::map<std::pair<uint32_t, uint32_t>, Run> runs;
  uint64_t total_rounds = 0, bits_up = 0, bits_down = 0;
  for (const RoundRecord& r : *rounds) {
    Run& run = runs[{r.algorithm, r.run}];
    run.algorithm = r.algorithm;
    run.run = r.run;
    const bool init = r.round == fedrt::protocol::kInitRound;
    run.initial_exchange = run.initial_exchange || init;
    if (!init) ++run.rounds, ++total_rounds;
    if ((run.rounds == 0 && init) || (!init && Shown(r.round) >= Shown(run.last.round))) run.last = r;
    bits_up += r.bits_up;
    bits_down += r.bits_down;
  }
  std::map<uint32_t, fedrt::net::MemberTotals> part;
  for (const auto& m : *members) part[m.device] = m;
  std::set<std::string> revoked_ids;
  for (const auto& r : *revoked) revoked_ids.insert(r.id);

  if (json) {
    Json out;
    out["state"] = path;
    out["experiment"] = {{"identity", exp.identity}, {"task", exp.task}, {"algorithms", exp.algorithms}};
    out["runs"] = Json::array();
    for (const auto& [key, run] : runs) {
      const RoundRecord& l = run.last;
      out["runs"].push_back({{"algorithm", AlgorithmName(exp, run.algorithm)}, {"algorithm_index", run.algorithm},
                             {"run", run.run}, {"rounds", run.rounds}, {"initial_exchange", run.initial_exchange},
                             {"last", {{"round", Shown(l.round)}, {"error", NumJson(l.error)}, {"agents", l.agents},
                                       {"sampled", l.sampled}, {"closed_by", l.closed_by}, {"failure", l.failure},
                                       {"closed_at", l.closed_at}}}});
    }
    out["totals"] = {{"rounds", total_rounds}, {"bits_up", bits_up}, {"bits_down", bits_down}};
    out["devices"] = Json::array();
    for (const auto& d : *devices) {
      const auto it = part.find(d.index);
      const fedrt::net::MemberTotals m = it == part.end() ? fedrt::net::MemberTotals{} : it->second;
      out["devices"].push_back(
          {{"id", d.id}, {"index", d.index}, {"last_event", d.last_event}, {"first_seen", d.first_seen},
           {"last_seen", d.last_seen}, {"connections", d.connections}, {"rounds", m.rounds},
           {"bytes_up", m.bytes_up}, {"bytes_down", m.bytes_down},
           {"last_duration_ms", m.last_duration_ms ? Json(*m.last_duration_ms) : Json(nullptr)},
           {"revoked", revoked_ids.count(d.id) != 0}});
    }
    out["revocations"] = Json::array();
    for (const auto& r : *revoked)
      out["revocations"].push_back({{"id", r.id}, {"revoked_at", r.revoked_at}, {"reason", r.reason}});
    fmt::print("{}\n", out.dump(2));
    return 0;
  }

  fmt::print("state       {}\n", path);
  if (exp.identity.empty()) fmt::print("experiment  none recorded yet (no coordinator has started on this file)\n");
  else
    fmt::print("experiment  {} (task {})\n", exp.algorithms.empty() ? "?" : fmt::format("{}", fmt::join(exp.algorithms, ", ")),
               exp.task.empty() ? "?" : exp.task);

  if (runs.empty()) {
    fmt::print("\nrounds: none committed yet\n");
  } else {
    fmt::print("\nrounds: {} committed, {} up, {} down (error, agents/sampled and closing of each run's last round)\n",
               total_rounds, Bytes(bits_up / 8), Bytes(bits_down / 8));
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> failures;
    for (const auto& [key, run] : runs) {
      const RoundRecord& l = run.last;
      const std::string name = AlgorithmName(exp, run.algorithm);
      rows.push_back({name, std::to_string(run.run), std::to_string(run.rounds), Num(l.error),
                      fmt::format("{}/{}", l.agents, l.sampled), l.closed_by, When(l.closed_at, now)});
      if (!l.failure.empty())
        failures.push_back(fmt::format("{} run {} round {}: {}", name, run.run,
                                       l.round == fedrt::protocol::kInitRound ? "init" : std::to_string(Shown(l.round)),
                                       l.failure));
    }
    PrintTable({"algorithm", "run", "rounds", "error", "agents", "closed by", "closed"}, rows, {1, 2});
    for (const auto& f : failures) fmt::print("  failed: {}\n", f);
  }

  if (devices->empty()) {
    fmt::print("\ndevices: none has connected yet\n");
  } else {
    fmt::print("\ndevices: {} known{}\n", devices->size(),
               revoked_ids.empty() ? "" : fmt::format(", {} revoked", revoked_ids.size()));
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : *devices) {
      const auto it = part.find(d.index);
      const fedrt::net::MemberTotals m = it == part.end() ? fedrt::net::MemberTotals{} : it->second;
      rows.push_back({d.id + (revoked_ids.count(d.id) ? " (revoked)" : ""), std::to_string(d.index),
                      std::to_string(d.connections), std::to_string(m.rounds), Bytes(m.bytes_up), Bytes(m.bytes_down),
                      m.last_duration_ms ? std::to_string(*m.last_duration_ms) : "-", When(d.last_seen, now),
                      d.last_event});
    }
    PrintTable({"id", "index", "connections", "rounds", "up", "down", "last round ms", "last seen", "last event"}, rows,
               {1, 2, 3, 4, 5, 6});
  }

  if (revoked->empty()) {
    fmt::print("\nrevoked: none\n");
  } else {
    fmt::print("\nrevoked: {}\n", revoked->size());
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : *revoked) rows.push_back({r.id, When(r.revoked_at, now), r.reason});
    PrintTable({"id", "revoked", "reason"}, rows, {});
  }
  return 0;
}
