// Splitting a data set into device shards (fedrt/data/split.h) and writing
// them back (fedrt/data/shard.h): every example lands on exactly one device,
// the same seed gives the same split, a small Dirichlet alpha concentrates
// each device on few labels, and a written CSV reads back to the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "fedrt/data/shard.h"
#include "fedrt/data/split.h"

namespace fedrt::data {
namespace {

std::vector<double> Labels(int n, int classes) {
  std::vector<double> y;
  for (int j = 0; j < n; ++j) y.push_back(j % classes);
  return y;
}

// Mean over devices of the largest label's share of the device's examples.
double MeanTopShare(const std::vector<std::vector<uint64_t>>& parts, const std::vector<double>& y) {
  double sum = 0;
  for (const auto& p : parts) {
    std::map<double, int> h;
    for (uint64_t j : p) ++h[y[j]];
    int top = 0;
    for (auto& [k, n] : h) top = std::max(top, n);
    sum += static_cast<double>(top) / static_cast<double>(p.size());
  }
  return sum / static_cast<double>(parts.size());
}

TEST(DirichletSplit, PartitionsDeterministicallyAndConcentratesLabels) {
  const auto y = Labels(2000, 10);
  auto a = DirichletSplit(y, 20, 0.3, 10, 7);
  ASSERT_TRUE(a.ok()) << a.status().message();
  std::set<uint64_t> seen;
  uint64_t total = 0;
  for (const auto& p : *a) {
    EXPECT_GE(p.size(), 10u);
    total += p.size();
    seen.insert(p.begin(), p.end());
  }
  EXPECT_EQ(total, y.size());
  EXPECT_EQ(seen.size(), y.size());  // each example exactly once
  auto again = DirichletSplit(y, 20, 0.3, 10, 7);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*a, *again);
  auto other = DirichletSplit(y, 20, 0.3, 10, 8);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*a, *other);
  // 10 balanced classes: an IID device's top label holds about 10-20 %; with
  // alpha = 0.3 most of a device's examples come from one or two labels.
  auto iid = DirichletSplit(y, 20, 1000.0, 10, 7);
  ASSERT_TRUE(iid.ok());
  EXPECT_LT(MeanTopShare(*iid, y), 0.25);
  EXPECT_GT(MeanTopShare(*a, y), 0.45);
}

TEST(DirichletSplit, RefusesWhatCannotBeSplit) {
  EXPECT_FALSE(DirichletSplit(Labels(50, 2), 10, 0.3, 10, 1).ok());  // 50 < 10 x 10
  EXPECT_FALSE(DirichletSplit(Labels(50, 2), 5, 0.0, 1, 1).ok());
  EXPECT_FALSE(UniformSplit(3, 5, 1).ok());
  auto u = UniformSplit(103, 5, 1);
  ASSERT_TRUE(u.ok());
  for (const auto& p : *u) EXPECT_TRUE(p.size() == 20 || p.size() == 21);
}

TEST(WriteCsvShard, ReadsBackBitForBit) {
  Shard s;
  s.dim = 2;
  s.features = {"u", "v"};
  s.x = {0.1, -1e-300, 1.0 / 3.0, 12345.678901234567};
  s.y = {3, 0.7};
  const auto p = std::filesystem::temp_directory_path() / ("fedrt_write_" + std::to_string(::getpid()) + ".csv");
  ASSERT_TRUE(WriteCsvShard(p.string(), s, "target").ok());
  auto back = ReadCsvShard(p.string(), "target", LabelKind::kReal);
  std::filesystem::remove(p);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->x, s.x);
  EXPECT_EQ(back->y, s.y);
  EXPECT_EQ(back->features, s.features);
  const Shard sub = SubShard(s, {1});
  EXPECT_EQ(sub.x, (std::vector<double>{1.0 / 3.0, 12345.678901234567}));
  EXPECT_EQ(sub.y, (std::vector<double>{0.7}));
}

}  // namespace
}  // namespace fedrt::data
