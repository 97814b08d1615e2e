// fedrt-status end to end (runtime/apps/fedrt_status.cc) on a state file
// written through StateStore, with the writer still holding it open as a
// running coordinator does: the text for people, --json for tools, and the
// errors for a missing or foreign file and for bad flags.

#include <sqlite3.h>
#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "fedrt/coordinator/state_store.h"

namespace fedrt::net::testing {
namespace {

constexpr double kT0 = 1700000000;  // 2023-11-14 22:13:20 UTC
const std::string kNow = "1700000600";

class StatusCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);  // the children print local time
    dir_ = TestDir();
    db_ = (dir_ / "coordinator.db").string();
    auto s = StateStore::Open(db_);
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(*s);
  }

  // Two algorithms: fedavg with 3 rounds of devices 0 and 1, scaffold with
  // one round closed at the deadline with device 0 only; device 2 revoked.
  void Fill() {
    ASSERT_TRUE(store_->check_experiment("task=00000000000000ab;algorithms=fedavg,scaffold").ok());
    for (const char* id : {"dev0000", "dev0001", "dev0002"})
      ASSERT_TRUE(store_->upsert_device(id, static_cast<uint32_t>(id[6] - '0'), "registered").ok());
    ASSERT_TRUE(store_->upsert_device("dev0001", 1, "disconnected").ok());
    const std::vector<double> x = {1.0, 2.0};
    RoundVectors v;
    v.state.push_back({x.data(), x.size()});
    for (uint32_t t = 0; t < 3; ++t) {
      RoundRecord r;
      r.round = t;
      r.agents = r.sampled = 2;
      r.error = 0.5 / (1 << t);
      r.bits_up = 8000;
      r.bits_down = 16000;
      r.closed_at = kT0 + 60 * t;
      r.closed_by = "all";
      r.reports = {{0, 10, 1.0, 0.5, 40 + t, 1000, 500}, {1, 10, 1.0, 0.5, 70 + t, 1000, 500}};
      ASSERT_TRUE(store_->save_round(r, {0, 1}, v).ok());
    }
    RoundRecord s;
    s.algorithm = 1;
    s.agents = 1;
    s.sampled = 2;
    s.error = std::nan("");
    s.bits_up = 4000;
    s.bits_down = 16000;
    s.closed_at = kT0 + 300;
    s.closed_by = "deadline";
    s.reports = {{0, 10, 1.0, 0.5, 55, 1000, 500}};
    ASSERT_TRUE(store_->save_round(s, {0}, v).ok());
    ASSERT_TRUE(store_->record_revocation({"dev0002", kT0 + 400, "lost"}).ok());
    // Fixed registry times, so the ages printed are known.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE devices SET first_seen = 1699999990, last_seen = 1700000500 + device_index",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }

  fs::path dir_;
  std::string db_;
  std::unique_ptr<StateStore> store_;
};

bool Has(const std::string& text, const std::string& re) { return std::regex_search(text, std::regex(re)); }

TEST_F(StatusCliTest, TextSaysWhatTheRunDidWhileTheCoordinatorHoldsTheFile) {
  Fill();
  const CliResult r = RunCli("fedrt-status", {"--state", "coordinator.db", "--now", kNow}, dir_);
  ASSERT_EQ(r.rc, 0) << Show(r);
  const std::string& t = r.out;
  EXPECT_TRUE(Has(t, "experiment +fedavg, scaffold \\(task 00000000000000ab\\)\n")) << t;
  EXPECT_TRUE(Has(t, "\nrounds: 4 committed, 3.5 kB up, 8.0 kB down ")) << t;
  EXPECT_TRUE(Has(t, "\n +fedavg +0 +3 +0\\.125 +2/2 +all +2023-11-14 22:15:20 \\(8 min ago\\)\n")) << t;
  EXPECT_TRUE(Has(t, "\n +scaffold +0 +1 +- +1/2 +deadline +2023-11-14 22:18:20 \\(5 min ago\\)\n")) << t;
  EXPECT_TRUE(Has(t, "\ndevices: 3 known, 1 revoked\n")) << t;
  EXPECT_TRUE(Has(t, "\n +dev0000 +0 +1 +4 +2\\.0 kB +4\\.0 kB +55 +2023-11-14 22:21:40 \\(1 min ago\\) +registered\n")) << t;
  EXPECT_TRUE(Has(t, "\n +dev0001 +1 +1 +3 +1\\.5 kB +3\\.0 kB +72 .* disconnected\n")) << t;
  EXPECT_TRUE(Has(t, "\n +dev0002 \\(revoked\\) +2 +1 +0 +0 B +0 B +- .* registered\n")) << t;
  EXPECT_TRUE(Has(t, "\nrevoked: 1\n +id +revoked +reason\n +dev0002 +2023-11-14 22:20:00 \\(3 min ago\\) +lost\n")) << t;
  EXPECT_EQ(r.err, "");
}

TEST_F(StatusCliTest, JsonCarriesTheSameFactsForTools) {
  Fill();
  const CliResult r = RunCli("fedrt-status", {"--state", "coordinator.db", "--json"}, dir_);
  ASSERT_EQ(r.rc, 0) << Show(r);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["experiment"]["algorithms"], nlohmann::json({"fedavg", "scaffold"}));
  EXPECT_EQ(j["experiment"]["task"], "00000000000000ab");
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["algorithm"], "fedavg");
  EXPECT_EQ(j["runs"][0]["rounds"], 3);
  EXPECT_EQ(j["runs"][0]["last"]["round"], 3);
  EXPECT_EQ(j["runs"][0]["last"]["error"], 0.125);
  EXPECT_EQ(j["runs"][0]["last"]["closed_at"], kT0 + 120);
  EXPECT_EQ(j["runs"][1]["algorithm"], "scaffold");
  EXPECT_TRUE(j["runs"][1]["last"]["error"].is_null()) << "no error metric";
  EXPECT_EQ(j["runs"][1]["last"]["closed_by"], "deadline");
  EXPECT_EQ(j["totals"]["rounds"], 4);
  EXPECT_EQ(j["totals"]["bits_up"], 28000);
  EXPECT_EQ(j["totals"]["bits_down"], 64000);
  ASSERT_EQ(j["devices"].size(), 3u);
  EXPECT_EQ(j["devices"][0]["id"], "dev0000");
  EXPECT_EQ(j["devices"][0]["rounds"], 4);
  EXPECT_EQ(j["devices"][0]["bytes_up"], 2000);
  EXPECT_EQ(j["devices"][0]["bytes_down"], 4000);
  EXPECT_EQ(j["devices"][0]["last_duration_ms"], 55);
  EXPECT_EQ(j["devices"][1]["last_event"], "disconnected");
  EXPECT_EQ(j["devices"][1]["connections"], 1);
  EXPECT_EQ(j["devices"][2]["revoked"], true);
  EXPECT_TRUE(j["devices"][2]["last_duration_ms"].is_null());
  ASSERT_EQ(j["revocations"].size(), 1u);
  EXPECT_EQ(j["revocations"][0]["id"], "dev0002");
  EXPECT_EQ(j["revocations"][0]["reason"], "lost");
}

TEST_F(StatusCliTest, AFreshFileSaysNothingHappenedYet) {
  const CliResult r = RunCli("fedrt-status", {"--state", "coordinator.db"}, dir_);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_TRUE(Has(r.out, "experiment +none recorded yet")) << r.out;
  EXPECT_TRUE(Has(r.out, "rounds: none committed yet")) << r.out;
  EXPECT_TRUE(Has(r.out, "devices: none has connected yet")) << r.out;
  EXPECT_TRUE(Has(r.out, "revoked: none")) << r.out;
}

TEST_F(StatusCliTest, ForeignFilesExit1MissingOnesAndBadFlags2) {
  std::ofstream(dir_ / "notes.txt") << "these are notes, not a database; they fill SQLite's hundred-byte header.....\n";
  const std::vector<std::tuple<std::vector<std::string>, std::string, int>> files = {
      {{"--state", "missing.db"}, "state db 'missing.db' not found", 2},  // a usage error (docs/cli.md)
      {{"--state", "notes.txt", "--json"}, "'notes.txt' is not a fedrt state database", 1},
  };
  for (const auto& [args, want, rc] : files) {
    const CliResult r = RunCli("fedrt-status", args, dir_);
    EXPECT_EQ(r.rc, rc) << Show(r);
    EXPECT_NE(r.err.find("fedrt-status: error: " + want), std::string::npos) << Show(r);
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(dir_ / "missing.db")) << "a reader creates nothing";
  for (const std::vector<std::string>& args : {std::vector<std::string>{}, {"--state"}, {"--state", "coordinator.db", "--jsn"}}) {
    const CliResult r = RunCli("fedrt-status", args, dir_);
    EXPECT_EQ(r.rc, 2) << Show(r);
    EXPECT_NE(r.err, "") << Show(r);
  }
  EXPECT_EQ(RunCli("fedrt-status", {"--help"}, dir_).rc, 0);
}

}  // namespace
}  // namespace fedrt::net::testing
