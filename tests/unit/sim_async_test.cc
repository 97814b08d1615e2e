// The simulator's virtual clock and buffered asynchronous rounds
// (sim/device_clock.h, sim/async_schedule.h, sim/async_driver.h,
// docs/async.md): offline agents are never sampled, a late member is dropped
// at the deadline, time_s follows the slowest member; FedBuff's runs are
// deterministic, keep Scaffold's control variates consistent (it reaches x*),
// and bad [devices] and async keys are refused naming the key or file:line.

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "fedrt/config/experiment_toml.h"
#include "fedrt/privacy/run_budget.h"
#include "fedrt/sim/async_schedule.h"
#include "fedrt/sim/device_clock.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::sim::async_testing {
namespace {

const char* kLsq = R"(
    [problem]
    kind = "lsq"
    agents = 10
    dim = 4
    samples = 40
    concept_shift = 1.0
    [algorithm]
    names = ["fedavg", "scaffold"]
    step = 0.02
    local_steps = 5
    batch = 0
    [run]
    rounds = 60
    runs = 1
    threads = 2
    plot = false
)";

Result<config::ExperimentConfig> TryLoad(const std::string& text) {
  config::ExperimentConfig cfg;
  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    return Status::Invalid(e.what());
  }
  FEDRT_TRY(config::LoadExperimentTable(root, "test.toml", "", cfg));
  FEDRT_TRY(config::Validate(cfg));
  return cfg;
}

config::ExperimentConfig Load(const std::string& text) {
  auto c = TryLoad(text);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : config::ExperimentConfig{};
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string Error(const std::string& text) {
  auto c = TryLoad(text);
  if (!c.ok()) return c.status().message();
  auto r = RunExperiment(*c);
  return r.ok() ? std::string("(accepted)") : r.status().message();
}

TEST(SimAsync, BadKeysAreRefusedNamingThem) {
  auto with = [](const std::string& algorithm_keys, const std::string& rest = "") {
    std::string s = kLsq;
    s.replace(s.find("    [run]"), 0, algorithm_keys + "\n");
    return s + rest;
  };
  EXPECT_NE(Error(with("    mode = \"async\"\n    buffer = 0")).find("algorithm.buffer must be >= 1"), std::string::npos);
  EXPECT_NE(Error(with("    mode = \"async\"\n    buffer = 8\n    concurrency = 4"))
                .find("algorithm.concurrency (4) must be >= algorithm.buffer (8)"),
            std::string::npos);
  EXPECT_NE(Error(with("    mode = \"later\"")).find("algorithm.mode must be"), std::string::npos);
  EXPECT_NE(Error(with("    buffer = 4")).find("are for algorithm.mode = \"async\""), std::string::npos);
  EXPECT_NE(Error(with("    mode = \"async\"\n    staleness_exponent = -1")).find("staleness_exponent must be >= 0"),
            std::string::npos);
  EXPECT_NE(Error(with("", "[devices]\nspeed = { distribution = \"lognormal\", mu = 0.0, sigma = 0.7, scale = 2 }\n"))
                .find("unknown key 'devices.speed.scale'"),
            std::string::npos);
  EXPECT_NE(Error(with("", "[devices]\nbandwidth_mbps = { distribution = \"pareto\" }\n")).find("devices.bandwidth_mbps"),
            std::string::npos);
  EXPECT_NE(Error(with("", "[devices]\nspeed = -1\n")).find("devices.speed must be > 0"), std::string::npos);
  // A trace naming a device the experiment does not have, and overlapping intervals: file and line.
  const std::string unknown = WriteFile("unknown.csv", "device,start_s,end_s\n0,0,100\n12,5,50\n");
  std::string e = Error(with("", "[devices]\navailability = \"" + unknown + "\"\n"));
  EXPECT_NE(e.find(unknown + ":3: device 12 is not one of the experiment's devices 0..9"), std::string::npos) << e;
  const std::string overlap = WriteFile("overlap.csv", "device,start_s,end_s\n3,0,100\n1,0,10\n3,50,150\n");
  e = Error(with("", "[devices]\navailability = \"" + overlap + "\"\n"));
  EXPECT_NE(e.find(overlap + ":4: device 3's interval [50, 150) overlaps the one on line 2 [0, 100)"), std::string::npos)
      << e;
  const std::string header = WriteFile("header.csv", "agent,from,to\n0,0,1\n");
  e = Error(with("", "[devices]\navailability = \"" + header + "\"\n"));
  EXPECT_NE(e.find("the header must be 'device,start_s,end_s'"), std::string::npos) << e;
  EXPECT_NE(Error(with("    mode = \"async\"", "[compression]\nquantizer = \"rounding\"\nbits = 16\n"))
                .find("without compression.secure_aggregation"),
            std::string::npos);
  EXPECT_NE(Error(with("    mode = \"async\"", "[compression]\nquantizer = \"rounding\"\nbits = 16\nsecure_aggregation = true\n"))
                .find("with compression.secure_aggregation cannot run 'scaffold'"),
            std::string::npos);
}

// Agents 5..9 are never online: no round samples them, under full participation.
TEST(SimAsync, OfflineAgentsAreNeverSampled) {
  std::string trace = "device,start_s,end_s\n";
  for (int c = 0; c < 5; ++c) trace += std::to_string(c) + ",0,1e12\n";
  const std::string path = WriteFile("half.csv", trace);
  auto r = RunExperiment(Load(std::string(kLsq) + "[devices]\navailability = \"" + path + "\"\n"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& a : r->algorithms)
    for (size_t t = 1; t < a.agents[0].size(); ++t) EXPECT_EQ(a.agents[0][t], 5u) << a.name << " round " << t;
}

// Profiles: agent 9 works 100x slower than the others. Without a deadline each
// round waits for it; with deadline_s it is dropped and rounds last deadline_s.
TEST(SimAsync, ALateMemberIsDroppedAtTheDeadline) {
  std::string prof = "device,speed,bandwidth_mbps\n";
  for (int c = 0; c < 10; ++c) prof += std::to_string(c) + "," + (c == 9 ? "0.1" : "10") + ",1000\n";
  const std::string path = WriteFile("profiles.csv", prof);
  const std::string devices = "[devices]\nprofiles = \"" + path + "\"\n";
  auto wait = RunExperiment(Load(std::string(kLsq) + devices));
  auto drop = RunExperiment(Load(std::string(kLsq) + devices + "deadline_s = 20\n"));
  ASSERT_TRUE(wait.ok() && drop.ok());
  const auto& w = wait->algorithms[0];
  const auto& d = drop->algorithms[0];
  ASSERT_EQ(w.time_s[0].size(), 61u);
  for (size_t t = 1; t < 61; ++t) {
    EXPECT_EQ(w.agents[0][t], 10u);
    EXPECT_EQ(d.agents[0][t], 9u);
    EXPECT_GT(w.time_s[0][t] - w.time_s[0][t - 1], 20.0);  // the slow agent's work alone is longer
    EXPECT_DOUBLE_EQ(d.time_s[0][t] - d.time_s[0][t - 1], 20.0);
  }
}

// Without [devices], sync rounds have no time_s column and no clock.
TEST(SimAsync, NoDevicesTableNoClock) {
  auto r = RunExperiment(Load(kLsq));
  ASSERT_TRUE(r.ok());
  for (const auto& a : r->algorithms) EXPECT_TRUE(a.time_s.empty());
}

std::string AsyncLsq(const std::string& extra = "") {
  std::string s = kLsq;
  s.replace(s.find("    [run]"), 0,
            "    mode = \"async\"\n    buffer = 3\n    concurrency = 5\n    max_staleness = 8\n    staleness_exponent = 0.5\n");
  return s + "[devices]\nspeed = { distribution = \"lognormal\", mu = 0.0, sigma = 0.7 }\n" + extra;
}

// Scaffold under buffered rounds: each device commits its dc when its update
// enters a buffer and the server adds dc / N, so mean_c c_c = c holds and the
// deterministic run reaches x* (FedAvg stays at its biased fixed point).
TEST(SimAsync, AsyncScaffoldKeepsItsControlVariatesConsistent) {
  config::ExperimentConfig cfg = Load(AsyncLsq());
  cfg.rounds = 600;
  auto r = RunExperiment(cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& fedavg = r->algorithms[0];
  const auto& scaffold = r->algorithms[1];
  EXPECT_LT(scaffold.error[0].back(), 1e-20);
  EXPECT_GT(fedavg.error[0].back(), 1e-3);
  for (size_t t = 1; t < scaffold.agents[0].size(); ++t) {
    EXPECT_EQ(scaffold.agents[0][t], 3u);  // K updates per step
    EXPECT_GE(scaffold.time_s[0][t], scaffold.time_s[0][t - 1]);
  }
  EXPECT_GT(scaffold.extra.value("async_mean_staleness", 0.0), 0.0);
}

// The same experiment twice, and with another thread count: the same bits.
TEST(SimAsync, AsyncRunsAreDeterministic) {
  config::ExperimentConfig a = Load(AsyncLsq("availability = \"diurnal\"\n"));
  config::ExperimentConfig b = a;
  b.threads = 1;
  auto ra = RunExperiment(a), rb = RunExperiment(b);
  ASSERT_TRUE(ra.ok() && rb.ok()) << ra.status().message();
  for (size_t k = 0; k < ra->algorithms.size(); ++k) {
    EXPECT_EQ(ra->algorithms[k].error, rb->algorithms[k].error);
    EXPECT_EQ(ra->algorithms[k].time_s, rb->algorithms[k].time_s);
  }
  EXPECT_GT(ra->algorithms[0].time_s[0].back(), 0.0);
}

// Central DP-FedAvg per server step: every step adds N(0, sigma^2 C^2) and
// is composed without subsampling amplification (buffers are not Poisson
// samples), so epsilon after T steps is the ledger's at rate 1, above what
// q = 0.3 would claim.
TEST(SimAsync, CentralDpComposesPerStepWithoutAmplification) {
  std::string text = AsyncLsq("[privacy]\nmechanism = \"central\"\nclip = 1.0\nnoise_multiplier = 1.5\ntest_seed = 9\n");
  text.replace(text.find("[\"fedavg\", \"scaffold\"]"), std::string("[\"fedavg\", \"scaffold\"]").size(), "[\"fedavg\"]");
  config::ExperimentConfig cfg = Load(text);
  auto r = RunExperiment(cfg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& eps = r->algorithms[0].epsilon[0];
  ASSERT_EQ(eps.size(), 61u);
  auto ledger = [&](double rate) {
    auto b = privacy::RunBudget::Create(1e-5, std::nullopt, rate, [](uint32_t) { return 1.5; }, 60);
    EXPECT_TRUE(b.ok());
    double e = 0;
    for (int t = 0; t < 60; ++t) e = *b->CloseRound(1.5);
    return e;
  };
  EXPECT_DOUBLE_EQ(eps.back(), ledger(1.0));
  EXPECT_GT(eps.back(), 2 * ledger(0.3));
  for (size_t t = 1; t < eps.size(); ++t) EXPECT_GT(eps[t], eps[t - 1]);
  for (size_t t = 1; t < r->algorithms[0].agents[0].size(); ++t) EXPECT_EQ(r->algorithms[0].agents[0][t], 3u);
}

// SecAgg+ per buffer in the simulator: T steps of exactly K masked inputs
// each (no group forms after the last step) and the same bits on 1 and 2
// threads.
TEST(SimAsync, UnderSecAggEveryStepIsOneGroupOfK) {
  std::string text = AsyncLsq("[compression]\nquantizer = \"rounding\"\nbits = 16\nclip = 2.0\nsecure_aggregation = true\n");
  text.replace(text.find("[\"fedavg\", \"scaffold\"]"), std::string("[\"fedavg\", \"scaffold\"]").size(), "[\"fedavg\"]");
  config::ExperimentConfig cfg = Load(text);
  config::ExperimentConfig one = cfg;
  one.threads = 1;
  auto r = RunExperiment(cfg), r1 = RunExperiment(one);
  ASSERT_TRUE(r.ok() && r1.ok()) << r.status().message();
  const auto& a = r->algorithms[0];
  ASSERT_EQ(a.agents[0].size(), 61u);
  for (size_t t = 1; t < a.agents[0].size(); ++t) EXPECT_EQ(a.agents[0][t], 3u) << "step " << t;
  EXPECT_EQ(a.error, r1->algorithms[0].error);
  EXPECT_EQ(a.time_s, r1->algorithms[0].time_s);
  EXPECT_EQ(a.extra.value("async_dropped_stale", uint64_t{1}), 0u);
}

// The clock's diurnal windows: online(c, t) agrees with online_until and
// next_online; windows recur every day.
TEST(DeviceClock, DiurnalWindowsAreConsistent) {
  config::DevicesSettings d;
  d.present = true;
  d.availability = "diurnal";
  auto clock = DeviceClock::Build(d, 50, 7);
  ASSERT_TRUE(clock.ok());
  for (uint32_t c = 0; c < 50; ++c) {
    for (double t = 0; t < 3 * DeviceClock::kDay; t += 977.0) {
      const bool on = clock->online(c, t);
      if (on) {
        const double until = clock->online_until(c, t);
        EXPECT_GT(until, t);
        EXPECT_FALSE(clock->online(c, until));
        EXPECT_TRUE(clock->online(c, t + DeviceClock::kDay));
      } else {
        const double next = clock->next_online(c, t);
        EXPECT_GT(next, t);
        EXPECT_TRUE(clock->online(c, next));
        EXPECT_LE(next - t, DeviceClock::kDay);
      }
    }
  }
}

// The schedule never has more than `concurrency` jobs out, dispatches only
// online agents, and its decisions move forward in time.
TEST(AsyncSchedule, JobsStayWithinConcurrencyAndOnline) {
  config::DevicesSettings d;
  d.present = true;
  d.availability = "diurnal";
  auto clock = DeviceClock::Build(d, 200, 3);
  ASSERT_TRUE(clock.ok());
  AsyncSchedule s;
  s.init(*clock, 7, 11, 0);
  double last = 0;
  int arrivals = 0;
  while (arrivals < 2000) {
    const AsyncSchedule::Decision x = s.next();
    ASSERT_NE(x.kind, AsyncSchedule::Decision::Kind::kEnd);
    EXPECT_GE(x.t, last);
    last = x.t;
    EXPECT_LE(s.jobs_out(), 7u);
    if (x.kind == AsyncSchedule::Decision::Kind::kDispatch) {
      EXPECT_TRUE(clock->online(x.agent, x.t));
      s.cost(x.agent, 600.0 + 37.0 * (x.agent % 5));
    }
    if (x.kind == AsyncSchedule::Decision::Kind::kArrive) ++arrivals;
  }
  EXPECT_GT(last, DeviceClock::kDay);  // 2000 jobs of ~10 min on 7 slots span days
}

}  // namespace
}  // namespace fedrt::sim::async_testing
