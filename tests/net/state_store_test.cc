// The round log's vectors (state_vectors.cc): written from slices of the
// session's memory, read back whole or straight into targets; a stored state
// of another size is refused with both sizes named. The fleet's tables
// (state_devices.cc): devices, revocations, members' totals, and the
// read-only opening fedrt-status uses.

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "fedrt/coordinator/state_store.h"

namespace fedrt::net {
namespace {

namespace fs = std::filesystem;

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("fedrt-state-store-" + std::to_string(getpid()) + ".db");
    for (const char* ext : {"", "-wal", "-shm", ".rounds"}) fs::remove(path_.string() + ext);
    auto s = StateStore::Open(path_.string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    for (const char* ext : {"", "-wal", "-shm", ".rounds"}) fs::remove(path_.string() + ext);
  }
  fs::path path_;
  std::unique_ptr<StateStore> store_;
};

TEST_F(StateStoreTest, VectorsGoInFromSlicesAndComeBackWholeOrIntoTargets) {
  const std::vector<double> x = {1.5, -2.0, 3.25}, avg = {0.5, 0.25}, w = {7.0}, model = {9.0, 8.0};
  RoundRecord r;
  r.round = 4;
  r.agents = 3;
  r.closed_by = "all";
  RoundVectors v;
  v.theta.push_back({model.data(), model.size()});  // a model of its own (Fed-RR's x_RR): its own blob
  v.state = {{x.data(), x.size()}, {avg.data(), avg.size()}, {w.data(), w.size()}};  // three slices, one blob
  ASSERT_TRUE(store_->save_round(r, {0, 2}, v).ok());

  auto got = store_->get_round(0, 0, 4);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->theta, model);
  EXPECT_EQ((*got)->theta_in_state, 0u);
  EXPECT_EQ((*got)->state, (std::vector<double>{1.5, -2.0, 3.25, 0.5, 0.25, 7.0}));
  EXPECT_EQ((*got)->agents, 3u);
  auto rows = store_->load_rounds(kNoVectors);
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  EXPECT_TRUE((*rows)[0].theta.empty() && (*rows)[0].state.empty()) << "rows only: no vector read";

  std::vector<double> a(2), b(4);  // the same six values into two other slices
  ASSERT_TRUE(store_->read_state(0, 0, 4, {{a.data(), a.size()}, {b.data(), b.size()}}).ok());
  EXPECT_EQ(a, (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(b, (std::vector<double>{3.25, 0.5, 0.25, 7.0}));

  std::vector<double> small(5, -1.0);
  const Status st = store_->read_state(0, 0, 4, {{small.data(), small.size()}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(std::string(st.message()).find("6 values"), std::string::npos) << st.message();
  EXPECT_NE(std::string(st.message()).find("has 5"), std::string::npos) << st.message();
  const Status none = store_->read_state(0, 0, 5, {{small.data(), small.size()}});
  EXPECT_EQ(none.code(), StatusCode::kDataLoss);
  EXPECT_NE(std::string(none.message()).find("no stored server state"), std::string::npos) << none.message();
}

// The model that is the state's first slice (FedAvg's x_t) is stored once.
TEST_F(StateStoreTest, ARoundIsSavedOnceAndAModelInsideTheStateOnlyOnce) {
  const std::vector<double> x = {1.0, 2.0};
  RoundRecord r;
  r.round = 0;
  r.closed_by = "all";
  RoundVectors v;
  v.theta.push_back({x.data(), x.size()});
  v.state.push_back({x.data(), x.size()});
  ASSERT_TRUE(store_->save_round(r, {0}, v).ok());
  EXPECT_FALSE(store_->save_round(r, {0}, v).ok()) << "a round commits once";
  auto got = store_->get_round(0, 0, 0);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->state, x) << "the refused second commit left the first one whole";
  EXPECT_EQ((*got)->theta_in_state, 2u);
  EXPECT_EQ((*got)->theta, x) << "read from the state's first values";
}

TEST_F(StateStoreTest, TheExperimentIsEmptyUntilRecorded) {
  auto none = store_->experiment();
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(*none, "");
  ASSERT_TRUE(store_->check_experiment("task=00000000000000ab;algorithms=fedavg,scaffold").ok());
  auto got = store_->experiment();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "task=00000000000000ab;algorithms=fedavg,scaffold");
}

TEST_F(StateStoreTest, DevicesComeBackInIndexOrderWithTheirConnections) {
  ASSERT_TRUE(store_->upsert_device("dev0002", 2, "registered").ok());
  ASSERT_TRUE(store_->upsert_device("dev0000", 0, "registered").ok());
  ASSERT_TRUE(store_->upsert_device("dev0002", 2, "disconnected").ok());
  ASSERT_TRUE(store_->upsert_device("dev0002", 2, "registered").ok());
  ASSERT_TRUE(store_->upsert_device("dev0001", 1, "refused: too little memory").ok());
  auto got = store_->load_devices();
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].id, "dev0000");
  EXPECT_EQ((*got)[1].id, "dev0001");
  EXPECT_EQ((*got)[1].last_event, "refused: too little memory");
  EXPECT_EQ((*got)[2].id, "dev0002");
  EXPECT_EQ((*got)[2].index, 2u);
  EXPECT_EQ((*got)[2].connections, 2u) << "two registrations";
  EXPECT_EQ((*got)[2].last_event, "registered");
  EXPECT_GT((*got)[2].first_seen, 1e9);
  EXPECT_GE((*got)[2].last_seen, (*got)[2].first_seen);
}

TEST_F(StateStoreTest, ARevocationIsRecordedOncePerId) {
  auto none = store_->load_revocations();
  ASSERT_TRUE(none.ok() && none->empty());
  ASSERT_TRUE(store_->record_revocation({"dev0003", 1700000100, "lost"}).ok());
  ASSERT_TRUE(store_->record_revocation({"dev0001", 1700000000, "revoked by operator"}).ok());
  ASSERT_TRUE(store_->record_revocation({"dev0003", 1700000200, "stolen"}).ok());
  auto got = store_->load_revocations();
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].id, "dev0001") << "ordered by time";
  EXPECT_EQ((*got)[1].id, "dev0003");
  EXPECT_EQ((*got)[1].revoked_at, 1700000200);
  EXPECT_EQ((*got)[1].reason, "stolen") << "the second record replaced the first";
}

TEST_F(StateStoreTest, MemberTotalsSumTheRoundsAndKeepTheLastDuration) {
  const std::vector<double> x = {1.0};
  RoundVectors v;
  v.state.push_back({x.data(), x.size()});
  for (uint32_t t = 0; t < 3; ++t) {
    RoundRecord r;
    r.round = t;
    r.closed_at = 1700000000 + 60.0 * t;
    r.closed_by = "all";
    r.reports = {{0, 10, 1.0, 0.5, 100 + t, 1000, 200}, {2, 10, 1.0, 0.5, 300 + t, 1000, 400}};
    ASSERT_TRUE(store_->save_round(r, t == 1 ? std::vector<uint32_t>{0} : std::vector<uint32_t>{0, 2}, v).ok());
  }
  auto got = store_->member_totals();
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].device, 0u);
  EXPECT_EQ((*got)[0].rounds, 3u);
  EXPECT_EQ((*got)[0].bytes_up, 600u);
  EXPECT_EQ((*got)[0].bytes_down, 3000u);
  ASSERT_TRUE((*got)[0].last_duration_ms.has_value());
  EXPECT_EQ(*(*got)[0].last_duration_ms, 102u) << "the duration of the last round to close";
  EXPECT_EQ((*got)[1].device, 2u);
  EXPECT_EQ((*got)[1].rounds, 2u) << "round 1 did not include it";
  ASSERT_TRUE((*got)[1].last_duration_ms.has_value());
  EXPECT_EQ(*(*got)[1].last_duration_ms, 302u);
}

TEST_F(StateStoreTest, AReadOnlyStoreReadsWhileTheWriterHoldsTheFileAndWritesNothing) {
  ASSERT_TRUE(store_->check_experiment("task=1;algorithms=fedavg").ok());
  ASSERT_TRUE(store_->upsert_device("dev0000", 0, "registered").ok());
  ASSERT_TRUE(store_->record_revocation({"dev0000", 5, "lost"}).ok());
  auto ro = StateStore::OpenReadOnly(path_.string());  // store_ still open, in WAL mode
  ASSERT_TRUE(ro.ok()) << ro.status().message();
  auto devices = (*ro)->load_devices();
  ASSERT_TRUE(devices.ok() && devices->size() == 1u);
  auto exp = (*ro)->experiment();
  ASSERT_TRUE(exp.ok());
  EXPECT_EQ(*exp, "task=1;algorithms=fedavg");
  ASSERT_TRUE(store_->upsert_device("dev0001", 1, "registered").ok());
  auto later = (*ro)->load_devices();
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->size(), 2u) << "sees the writer's later commits";
  EXPECT_FALSE((*ro)->record_revocation({"dev0001", 6, "x"}).ok());
  EXPECT_FALSE((*ro)->upsert_device("dev0002", 2, "registered").ok());

  store_.reset();  // the writer stops: its -wal and -shm files go
  auto after = StateStore::OpenReadOnly(path_.string());
  ASSERT_TRUE(after.ok()) << after.status().message();
  auto revs = (*after)->load_revocations();
  ASSERT_TRUE(revs.ok() && revs->size() == 1u);
}

TEST_F(StateStoreTest, AReadOnlyOpenRefusesMissingAndForeignFiles) {
  auto missing = StateStore::OpenReadOnly((path_.string() + ".nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("not found"), std::string::npos);
  EXPECT_FALSE(fs::exists(path_.string() + ".nope")) << "nothing created";

  const std::string text = path_.string() + ".txt";
  std::ofstream(text) << "not a database, only text that is long enough to fill a header of one hundred bytes........\n";
  auto foreign = StateStore::OpenReadOnly(text);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(std::string(foreign.status().message()).find("is not a fedrt state database"), std::string::npos)
      << foreign.status().message();
  fs::remove(text);

  const std::string other = path_.string() + ".other";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto sql = StateStore::OpenReadOnly(other);
  ASSERT_FALSE(sql.ok());
  EXPECT_NE(std::string(sql.status().message()).find("is not a fedrt state database"), std::string::npos)
      << sql.status().message();
  fs::remove(other);
}

// A file written before the revocations table existed: readers see no
// revocation, and the next Open adds the table (same schema number).
TEST_F(StateStoreTest, AFileWithoutTheRevocationsTableGainsItAtOpen) {
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE revocations", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  {
    auto ro = StateStore::OpenReadOnly(path_.string());
    ASSERT_TRUE(ro.ok()) << ro.status().message();
    auto revs = (*ro)->load_revocations();
    ASSERT_TRUE(revs.ok()) << revs.status().message();
    EXPECT_TRUE(revs->empty());
  }
  auto s = StateStore::Open(path_.string());
  ASSERT_TRUE(s.ok()) << s.status().message();
  store_ = std::move(*s);
  ASSERT_TRUE(store_->record_revocation({"dev0000", 1, "lost"}).ok());
}

// The watermark (docs/security.md, "State that never goes back"): a db
// emptied after three commits is refused at open, naming both counts and the
// way on; an open that accepts the rollback takes it and brings the
// watermark back to the db.
// Rounds 0..n-1 of algorithm 0, run 0, each with the model x (inside its state).
void SaveRounds(StateStore& store, uint32_t n, const std::vector<double>& x) {
  RoundVectors v;
  v.theta.push_back({x.data(), x.size()});
  v.state = {{x.data(), x.size()}};
  for (uint32_t t = 0; t < n; ++t) {
    RoundRecord r;
    r.round = t;
    r.closed_by = "all";
    ASSERT_TRUE(store.save_round(r, {0, 1}, v).ok());
  }
}

TEST_F(StateStoreTest, AnEmptiedDbIsRefusedAgainstItsWatermarkUnlessTheRollbackIsAccepted) {
  SaveRounds(*store_, 3, {1.0, 2.0});
  EXPECT_EQ(store_->committed_rounds(), 3u);
  store_.reset();
  for (const char* ext : {"-wal", "-shm"}) fs::remove(path_.string() + ext);
  std::ofstream(path_, std::ios::trunc).close();
  auto refused = StateStore::Open(path_.string());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  const std::string m = refused.status().message();
  EXPECT_NE(m.find("holds 0 committed rounds but its watermark"), std::string::npos) << m;
  EXPECT_NE(m.find(".rounds' records 3"), std::string::npos) << m;
  EXPECT_NE(m.find("--accept-rollback"), std::string::npos) << m;
  auto accepted = StateStore::Open(path_.string(), /*accept_rollback=*/true);
  ASSERT_TRUE(accepted.ok()) << accepted.status().message();
  EXPECT_EQ((*accepted)->rolled_back_from(), 3u);
  EXPECT_EQ((*accepted)->committed_rounds(), 0u);
  accepted->reset();
  auto again = StateStore::Open(path_.string());
  ASSERT_TRUE(again.ok()) << again.status().message();
  store_ = std::move(*again);
}

// A db whose pages are damaged is refused at open (SQLite's quick_check, or
// the first read that meets the damage), naming the file.
TEST_F(StateStoreTest, ACorruptDbIsRefusedAtOpen) {
  SaveRounds(*store_, 3, std::vector<double>(2000, 0.5));  // several pages
  store_.reset();
  ASSERT_FALSE(fs::exists(path_.string() + "-wal"));
  const auto size = fs::file_size(path_);
  ASSERT_GE(size, 4u * 4096u);
  {  // page 2 is a b-tree page: its type byte (offset 0 of the page) made invalid
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const char junk[16] = {'\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f',
                           '\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f'};
    f.write(junk, sizeof junk);
  }
  auto refused = StateStore::Open(path_.string());
  ASSERT_FALSE(refused.ok());
  const std::string m = refused.status().message();
  EXPECT_NE(m.find("state db"), std::string::npos) << m;
  EXPECT_TRUE(m.find("integrity check") != std::string::npos || m.find("malformed") != std::string::npos) << m;
}

}  // namespace
}  // namespace fedrt::net
