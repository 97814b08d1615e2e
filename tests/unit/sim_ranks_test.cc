// The distributed simulator (docs/architecture.md, "MPI") without MPI: K
// ranks as K threads of one process over an in-memory exchange, so that the
// sanitizer preset (which has no MPI) checks the split, the message packing
// and the failure frames. The same results as one process, bit for bit.

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "fedrt/config/experiment_toml.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim {
namespace {

// Every rank's bytes, behind a reusable barrier.
class Board {
 public:
  explicit Board(uint32_t k) : k_(k), slots_(k) {}
  uint32_t size() const { return k_; }
  std::vector<std::vector<uint8_t>>& slots() { return slots_; }
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    const uint64_t gen = gen_;
    if (++count_ == k_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  uint32_t k_;
  std::vector<std::vector<uint8_t>> slots_;
  std::mutex m_;
  std::condition_variable cv_;
  uint32_t count_ = 0;
  uint64_t gen_ = 0;
};

class ThreadExchange final : public RankExchange {
 public:
  ThreadExchange(Board& b, uint32_t r) : b_(b), r_(r) {}
  uint32_t rank() const override { return r_; }
  uint32_t size() const override { return b_.size(); }
  Status allgather(const std::vector<uint8_t>& mine, std::vector<uint8_t>& all, std::vector<size_t>& offsets) override {
    b_.slots()[r_] = mine;
    b_.wait();  // everyone wrote
    offsets.assign(size() + 1, 0);
    all.clear();
    for (uint32_t r = 0; r < size(); ++r) {
      all.insert(all.end(), b_.slots()[r].begin(), b_.slots()[r].end());
      offsets[r + 1] = all.size();
    }
    b_.wait();  // everyone read
    return Status::Ok();
  }

 private:
  Board& b_;
  uint32_t r_;
};

config::ExperimentConfig Garnet(bool secure, double participation) {
  toml::table root = toml::parse(R"(
    [problem]
    kind = "garnet"
    heterogeneity = "high"
    agents = 10
    states = 30
    actions = 2
    branching = 2
    dim = 8
    [algorithm]
    names = ["fedlsa", "scafflsa"]
    local_steps = 100
    [run]
    rounds = 8
    runs = 2
    threads = 1
    plot = false
  )");
  if (secure)
    root.insert("compression", toml::table{{"quantizer", "rounding"}, {"bits", 16}, {"clip", 2.0},
                                           {"secure_aggregation", true}, {"secagg_dropout", 0.2}});
  root.insert_or_assign("participation", toml::table{{"rate", participation}});
  config::ExperimentConfig cfg;
  EXPECT_TRUE(config::LoadExperimentTable(root, "test", "", cfg).ok());
  return cfg;
}

// Runs `cfg` as k ranks in threads; every rank's result.
std::vector<Result<SimResult>> RunRanks(const config::ExperimentConfig& cfg, uint32_t k) {
  Board board(k);
  std::vector<std::optional<Result<SimResult>>> out(k);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < k; ++r)
    threads.emplace_back([&, r] {
      ThreadExchange ex(board, r);
      RankChannel channel(ex);
      SimOptions o;
      o.ranks = &channel;
      out[r].emplace(RunExperiment(cfg, o));
    });
  for (auto& t : threads) t.join();
  std::vector<Result<SimResult>> results;
  for (auto& r : out) results.push_back(std::move(*r));
  return results;
}

bool SameBits(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(double)) != 0) return false;
  return true;
}

TEST(SimRanks, RangesSplitUnevenlyAndMayBeEmpty) {
  EXPECT_EQ(RangeOf(10, 4, 0).lo, 0u);
  EXPECT_EQ(RangeOf(10, 4, 0).hi, 3u);
  EXPECT_EQ(RangeOf(10, 4, 1).hi, 6u);
  EXPECT_EQ(RangeOf(10, 4, 2).hi, 8u);
  EXPECT_EQ(RangeOf(10, 4, 3).hi, 10u);
  EXPECT_EQ(RangeOf(3, 4, 3).count(), 0u);
}

TEST(SimRanks, EveryRankComputesTheSingleProcessBits) {
  for (bool secure : {false, true})
    for (double q : {1.0, 0.5}) {
      const config::ExperimentConfig cfg = Garnet(secure, q);
      auto single = RunExperiment(cfg);
      ASSERT_TRUE(single.ok()) << single.status().message();
      for (uint32_t k : {1u, 3u, 4u}) {
        auto ranks = RunRanks(cfg, k);
        for (uint32_t r = 0; r < k; ++r) {
          ASSERT_TRUE(ranks[r].ok()) << ranks[r].status().message();
          ASSERT_EQ(ranks[r]->algorithms.size(), single->algorithms.size());
          for (size_t a = 0; a < single->algorithms.size(); ++a) {
            const AlgorithmResult& x = ranks[r]->algorithms[a];
            const AlgorithmResult& y = single->algorithms[a];
            EXPECT_TRUE(SameBits(x.error, y.error)) << "secure " << secure << " q " << q << " K " << k << " rank " << r;
            EXPECT_EQ(x.agents, y.agents);
            EXPECT_EQ(x.bits_up, y.bits_up);
            EXPECT_EQ(x.agent_steps, y.agent_steps);
          }
        }
      }
    }
}

TEST(SimRanks, AFailingRankStopsEveryRankWithItsError) {
  Board board(3);
  std::vector<Status> st(3);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      ThreadExchange ex(board, r);
      RankChannel channel(ex);
      std::vector<uint8_t> all;
      std::vector<size_t> offsets;
      uint64_t samples = 0;
      if (r == 1) st[r] = channel.fail(Status(StatusCode::kInternal, std::string("agent 4: boom")));
      else st[r] = channel.messages({1, 2, 3}, 7, all, offsets, samples);
      // Broken: no further collective (it would wait forever for rank 1).
      if (channel.broken()) st[r] = channel.agree_done(Status::Ok());
    });
  for (auto& t : threads) t.join();
  for (uint32_t r = 0; r < 3; ++r) EXPECT_STREQ(st[r].message(), "rank 1 of 3: agent 4: boom") << r;
}

TEST(SimRanks, RanksMustAgreeOnTheExperiment) {
  Board board(2);
  std::vector<Status> st(2);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      ThreadExchange ex(board, r);
      RankChannel channel(ex);
      st[r] = channel.agree_start(Status::Ok(), r == 0 ? 11 : 12, r == 0 ? "a.toml" : "b.toml");
    });
  for (auto& t : threads) t.join();
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(std::string(st[r].message()).find("rank 1 of 2 read a different experiment from 'b.toml' than rank 0 from 'a.toml'"),
              std::string::npos)
        << st[r].message();
  }
}

}  // namespace
}  // namespace fedrt::sim
