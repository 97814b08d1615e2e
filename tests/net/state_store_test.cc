// The round log's vectors (state_vectors.cc): written from slices of the
// session's memory, read back whole or straight into targets; a stored state
// of another size is refused with both sizes named.

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include <unistd.h>

#include "fedrt/net/state_store.h"

namespace fedrt::net {
namespace {

namespace fs = std::filesystem;

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("fedrt-state-store-" + std::to_string(getpid()) + ".db");
    fs::remove(path_);
    auto s = StateStore::Open(path_.string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    for (const char* ext : {"", "-wal", "-shm"}) fs::remove(path_.string() + ext);
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

}  // namespace
}  // namespace fedrt::net
