// Shard files (fedrt/data/shard.h) and data sources (fedrt/data/source.h):
// what a device reads at start, and the errors that stop a bad file there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "fedrt/data/shard.h"
#include "fedrt/data/source.h"

namespace fedrt::data {
namespace {

namespace fs = std::filesystem;

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt_shard_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  // The error of reading `text` as a binary-label shard.
  std::string Error(const std::string& text, LabelKind kind = LabelKind::kBinary) {
    const std::string p = Write("bad.csv", text);
    auto s = ReadCsvShard(p, "label", kind);
    EXPECT_FALSE(s.ok());
    return s.ok() ? "" : s.status().message();
  }
  fs::path dir_;
};

TEST_F(ShardTest, CsvWithHeaderLabelAnywhereAndQuotedNames) {
  const std::string p = Write("a.csv", "\"pixel 1\",label,x2\n# a comment\n0.5,1,-2\n\n1.5e1,0,3\n");
  auto s = ReadCsvShard(p, "label", LabelKind::kBinary);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->dim, 2u);
  EXPECT_EQ(s->count(), 2u);
  EXPECT_EQ(s->features, (std::vector<std::string>{"pixel 1", "x2"}));
  EXPECT_EQ(s->x, (std::vector<double>{0.5, -2, 15, 3}));
  EXPECT_EQ(s->y, (std::vector<double>{1, -1}));  // 0/1 stored as -1/+1
}

TEST_F(ShardTest, ByteOrderMarkOfSpreadsheetExportsIsIgnored) {
  auto s = ReadCsvShard(Write("bom.csv", "\xEF\xBB\xBFlabel,a\r\n1,2\r\n"), "label", LabelKind::kReal);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->features, (std::vector<std::string>{"a"}));
  EXPECT_EQ(s->x, (std::vector<double>{2}));
}

TEST_F(ShardTest, EveryBadCellIsNamedByFileLineAndColumn) {
  const std::string f = (dir_ / "bad.csv").string();
  EXPECT_EQ(Error("a,label\n1,1\n2,0,3\n"), f + ":3: 3 columns, the header has 2");
  EXPECT_EQ(Error("a,label\n1,1\nx,0\n"), f + ":3:1 (a): 'x' is not a number");
  EXPECT_EQ(Error("a,b,label\n1,nan,1\n"), f + ":2:2 (b): 'nan' is not a finite number (NaN and Inf are refused)");
  EXPECT_EQ(Error("a,label\n1,1\n-inf,1\n"), f + ":3:1 (a): '-inf' is not a finite number (NaN and Inf are refused)");
  EXPECT_EQ(Error("a,label\n1,\n"), f + ":2:2 (label): empty cell");
  EXPECT_EQ(Error("a,label\n1,2\n"),
            f + ":2:2 (label): label 2 is not a class of binary logistic regression (0/1 or -1/+1)");
  EXPECT_EQ(Error("a,label\n"), f + ": no data rows after the header");
  EXPECT_EQ(Error(""), f + ": empty file (a header row and data rows are expected)");
  EXPECT_EQ(Error("a,y\n1,1\n"), f + ":1: no label column 'label' in the header (2 columns: a,y)");
  // Least squares takes any finite label.
  EXPECT_TRUE(ReadCsvShard(Write("ok.csv", "a,label\n1,2.5\n"), "label", LabelKind::kReal).ok());
  EXPECT_EQ(ReadCsvShard((dir_ / "missing.csv").string(), "label", LabelKind::kReal).status().code(),
            StatusCode::kNotFound);
}

TEST_F(ShardTest, RecordFileRoundTripsAndRefusesDamage) {
  auto csv = ReadCsvShard(Write("a.csv", "x1,x2,label\n0.1,0.2,1\n-3,4e-300,-1\n5,6,0\n"), "label", LabelKind::kBinary);
  ASSERT_TRUE(csv.ok());
  const std::string rec = (dir_ / "a.rec").string();
  ASSERT_TRUE(WriteRecordShard(rec, *csv).ok());
  auto back = ReadRecordShard(rec, LabelKind::kBinary);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->dim, csv->dim);
  EXPECT_EQ(back->x, csv->x);  // bit for bit
  EXPECT_EQ(back->y, csv->y);
  EXPECT_EQ(fs::file_size(rec), 24u + 3u * 3u * 8u);
  fs::resize_file(rec, fs::file_size(rec) - 1);
  auto cut = ReadRecordShard(rec, LabelKind::kBinary);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(std::string(cut.status().message()).find("announces 3 records"), std::string::npos) << cut.status().message();
  EXPECT_FALSE(ReadRecordShard(Write("t.rec", "not a record file at all"), LabelKind::kReal).ok());
}

TEST(KeyedPermutation, IsABijectionAndDependsOnTheKey) {
  for (uint64_t n : {1ull, 2ull, 3ull, 10ull, 97ull, 1000ull, 4096ull}) {
    std::set<uint64_t> seen;
    bool moved = false;
    const KeyedPermutation p(n, 42);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t j = p(i);
      ASSERT_LT(j, n);
      seen.insert(j);
      moved = moved || j != i;
    }
    EXPECT_EQ(seen.size(), n);
    if (n >= 10) {
      EXPECT_TRUE(moved) << n;
      const KeyedPermutation q(n, 43);
      uint64_t same = 0;
      for (uint64_t i = 0; i < n; ++i) same += p(i) == q(i);
      EXPECT_LT(same, n / 2) << n;  // another key, another order
    }
  }
}

TEST(ArraySource, EveryPassVisitsEachExampleOnce) {
  const double x[] = {0, 0, 1, 10, 2, 20, 3, 30, 4, 40};
  const double y[] = {0, 1, 2, 3, 4};
  ArraySource src(x, y, 5, 2);
  for (uint64_t seed : {0ull, 7ull}) {
    src.restart(seed);
    std::multiset<double> labels;
    double xi[2], yi;
    std::vector<double> order;
    while (src.next(xi, &yi).ok()) {
      EXPECT_EQ(xi[1], 10 * yi);  // features travel with their label
      labels.insert(yi);
      order.push_back(yi);
    }
    EXPECT_EQ(labels, (std::multiset<double>{0, 1, 2, 3, 4}));
    if (seed == 0) {
      EXPECT_EQ(order, (std::vector<double>{0, 1, 2, 3, 4}));
    }
  }
}

}  // namespace
}  // namespace fedrt::data
