// Devices train on their own data (docs/data.md): each fedrt-device is given
// only its shard (--data), the task names the format and the label column,
// and the fleet's global iterate equals the simulator's on the same shards at
// every round. A device whose shard is bad (wrong column count, a non-numeric
// cell, NaN, Inf, no rows, a label outside the model's classes) stops at
// start with an error naming the file, line and column, takes no part, and
// the coordinator and the other devices run on.
#include <cmath>

#include "net_harness.h"

namespace fedrt::net::testing {
// Named, not anonymous: this file's constants stay apart from its unity
// batch neighbours' (cmake/unity_build.cmake).
namespace own_data {

constexpr int kAgents = 6, kRounds = 5;

class OwnDataTest : public NetTest {
 protected:
  // Shards of a binary logistic problem in R^3, the label between features.
  fs::path WriteShards() {
    const fs::path dir = dir_ / "shards";
    fs::create_directories(dir);
    for (int c = 0; c < kAgents; ++c) {
      std::ofstream f(dir / ("device-" + std::to_string(c) + ".csv"));
      f << "temperature,vibration,label,current\n";
      for (int j = 0; j < 20 + 3 * c; ++j) {
        const double a = std::sin(0.7 * j + c), b = std::cos(1.3 * j - c) + 0.1 * c, d = std::sin(0.31 * j * j);
        f << a << ',' << b << ',' << (a - 0.5 * b + 0.3 * d + 0.2 * std::sin(5.0 * j) > 0 ? 1 : 0) << ',' << d << '\n';
      }
    }
    std::ofstream t(dir_ / "test.csv");  // held out: scored by the simulator and the coordinator alike
    t << "temperature,vibration,label,current\n";
    for (int j = 0; j < 15; ++j) {
      const double a = std::cos(0.9 * j), b = std::sin(1.7 * j), d = std::cos(0.23 * j * j);
      t << a << ',' << b << ',' << (a - 0.5 * b + 0.3 * d > 0 ? 1 : 0) << ',' << d << '\n';
    }
    return dir;
  }
  fs::path Experiment(const std::string& extra = "") { return WriteExperiment(Body(extra)); }
  static std::string Body(const std::string& extra) {
    return "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\ntest = \"test.csv\"\n[model]\nkind = \"logistic\"\nl2 = 0.01\nintercept = true\n"
           "[algorithm]\nnames = [\"fedavg\", \"scaffold\"]\nstep = 0.1\nlocal_steps = 10\nbatch = 4\n"
        "[participation]\nrate = 0.7\n[compression]\nquantizer = \"dither\"\nlevels = 4\n[run]\nrounds = " +
        std::to_string(kRounds) + "\nseed = 2\n[network]\ndeadline_ms = 30000\nstart_timeout_ms = 60000\n" + extra;
  }
};

TEST_F(OwnDataTest, EachDeviceReadsItsShardAndTheFleetEqualsTheSimulator) {
  const fs::path shards = WriteShards();
  const auto cfg = Experiment("quorum = 1.0\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  for (int i = 0; i < kAgents; ++i)
    StartDevice(i, port, {"--data", (shards / ("device-" + std::to_string(i) + ".csv")).string()});
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  const pid_t sim = Spawn({Bin("fedrt-sim"), "--config", cfg.string(), "--out", (dir_ / "sim").string(), "--no-plot"},
                          dir_ / "sim.log");
  ASSERT_EQ(Wait(sim, 120000), 0) << ReadFile(dir_ / "sim.log");
  const auto rounds = Rounds();
  for (uint32_t a = 0; a < 2; ++a) {
    int identical = 0, compared = 0;
    const double rel = MaxRelDiff(rounds, SimThetas(cfg, a), a, &identical, &compared);
    std::printf("[own data, algorithm %u] rounds compared=%d bit-identical=%d max relative difference=%.3e\n", a,
                compared, identical, rel);
    EXPECT_EQ(compared, kRounds);
    EXPECT_EQ(identical, kRounds);
  }
  // The devices' reports (train and local loss) and the held-out scores are
  // the same numbers in both drivers, so the files are equal line for line.
  const std::string metrics = ReadFile(dir_ / "out" / "metrics.csv");
  EXPECT_EQ(metrics.substr(0, metrics.find('\n')),
            "algorithm,run,round,error,agents,bits_up,bits_down,train_loss,local_loss,test_loss,test_accuracy");
  EXPECT_EQ(metrics, ReadFile(dir_ / "sim" / "metrics.csv"));
  // devices.csv: one row per member and round, with its examples, losses and bytes.
  std::istringstream dev(ReadFile(dir_ / "out" / "devices.csv"));
  std::string line;
  std::getline(dev, line);
  EXPECT_EQ(line, "algorithm,run,round,device,examples,loss_before,loss_after,duration_ms,bytes_down,bytes_up");
  int rows = 0;
  while (std::getline(dev, line)) {
    ++rows;
    const std::vector<std::string> f = Cells(line);
    ASSERT_EQ(f.size(), 10u) << line;
    EXPECT_EQ(f[4], "40") << line;  // local_steps 10 x batch 4
    EXPECT_TRUE(std::isfinite(std::stod(f[5])) && std::stod(f[5]) > 0) << line;
    EXPECT_TRUE(std::isfinite(std::stod(f[6])) && std::stod(f[6]) > 0) << line;
    EXPECT_GT(std::stoll(f[8]), 0) << line;
    EXPECT_GT(std::stoll(f[9]), 0) << line;
  }
  int members = 0;  // the agents column of metrics.csv: one devices.csv row per member
  std::istringstream m(metrics);
  std::getline(m, line);
  while (std::getline(m, line)) {
    const std::vector<std::string> f = Cells(line);
    members += std::stoi(f[4]);
  }
  EXPECT_GT(rows, 0);
  EXPECT_EQ(rows, members);
}

// A coordinator whose machine holds no shard ([data] coordinator_reads_shards
// = false, docs/data.md): N comes from problem.agents, d from the header of
// its own held-out file; the run completes with no error column (nan) and the
// same global iterates, device reports and held-out scores, bit for bit, as
// the run where the coordinator reads the shards.
TEST_F(OwnDataTest, TheCoordinatorRunsWithoutTheShardsAndGivesTheSameNumbers) {
  const fs::path shards = WriteShards();
  Provision(dir_ / "keys", kAgents);
  auto run = [&](const fs::path& cfg) {
    const pid_t co = StartCoordinator(cfg, 0, {});
    const int port = WaitPort();
    EXPECT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
    for (int i = 0; i < kAgents; ++i)
      StartDevice(i, port, {"--data", (shards / ("device-" + std::to_string(i) + ".csv")).string()});
    EXPECT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  };
  run(Experiment("quorum = 1.0\n"));  // the coordinator reads the shards
  EXPECT_NE(ReadFile(dir_ / "coordinator.log").find("read_by_coordinator=yes"), std::string::npos);
  const auto with_rounds = Rounds();
  const std::string with = ReadFile(dir_ / "out" / "metrics.csv");
  fs::rename(dir_ / "out", dir_ / "out-with-shards");
  fs::remove(dir_ / "coordinator.db");
  fs::remove(dir_ / "coordinator.db.rounds");  // its watermark: a new run
  for (int i = 0; i < kAgents; ++i) fs::remove_all(dir_ / Id(i));  // the devices start afresh too

  const fs::path server = dir_ / "server";  // the coordinator's own directory: its test file, no shard
  fs::create_directories(server);
  fs::copy_file(dir_ / "test.csv", server / "test.csv");
  std::string body = Body("quorum = 1.0\n");
  body.replace(body.find("[data]\n"), 7, "[problem]\nagents = 6\n[data]\ncoordinator_reads_shards = false\n");
  const fs::path blind = server / "experiment.toml";
  std::ofstream(blind) << body;
  ASSERT_FALSE(fs::exists(server / "shards"));
  run(blind);
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("listening address=127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("agents=6 problem=logistic d=4"), std::string::npos) << log;
  EXPECT_NE(log.find("read_by_coordinator=no"), std::string::npos) << log;

  const auto rounds = Rounds();  // the same global iterates
  ASSERT_EQ(rounds.size(), with_rounds.size());
  int identical = 0;
  for (size_t i = 0; i < rounds.size(); ++i) identical += rounds[i].theta == with_rounds[i].theta ? 1 : 0;
  EXPECT_EQ(identical, static_cast<int>(rounds.size()));

  // metrics.csv: error nan in every row, every other column equal to the run with the shards.
  auto rows = [](const std::string& text) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      out.push_back(Cells(line));
    }
    return out;
  };
  const auto a = rows(ReadFile(dir_ / "out" / "metrics.csv")), b = rows(with);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), 1u + 2u * (kRounds + 1));
  EXPECT_EQ(a[0], b[0]);
  int compared = 0;
  for (size_t r = 1; r < a.size(); ++r) {
    ASSERT_EQ(a[r].size(), 11u);
    EXPECT_EQ(a[r][3], "nan") << r;
    EXPECT_NE(b[r][3], "nan") << r;
    for (size_t c = 0; c < a[r].size(); ++c)
      if (c != 3) {
        EXPECT_EQ(a[r][c], b[r][c]) << "row " << r << " column " << b[0][c];
      }
    for (size_t c = 7; c < 11; ++c) compared += b[r][c] != "nan" && a[r][c] == b[r][c] ? 1 : 0;
  }
  std::printf("[coordinator without shards] rounds=%zu identical iterates=%d, metrics rows=%zu, "
              "train/local/test loss and accuracy cells equal=%d\n",
              rounds.size(), identical, a.size() - 1, compared);
}

struct BadShard {
  std::string name;
  std::string body;   // the bad device's file
  std::string error;  // after "<file>:"
};

class BadShardTest : public OwnDataTest, public ::testing::WithParamInterface<BadShard> {};

void PrintTo(const BadShard& b, std::ostream* os) { *os << b.name; }

TEST_P(BadShardTest, DeviceStopsAtStartNamingTheCellAndTheRunGoesOn) {
  const BadShard& b = GetParam();
  const fs::path shards = WriteShards();
  const fs::path bad = dir_ / "bad.csv";
  std::ofstream(bad) << b.body;
  const auto cfg = Experiment("quorum = 0.5\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  pid_t bad_pid = 0;
  for (int i = 0; i < kAgents; ++i) {
    const fs::path data = i == 3 ? bad : shards / ("device-" + std::to_string(i) + ".csv");
    const pid_t p = StartDevice(i, port, {"--data", data.string()});
    if (i == 3) bad_pid = p;
  }
  ASSERT_EQ(Wait(co, 120000), 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Wait(bad_pid, 10000), 1) << "refused: a run failure (docs/cli.md, \"Exit codes\")";
  const std::string dlog = ReadFile(dir_ / "dev0003.log");
  EXPECT_NE(dlog.find(bad.string() + ":" + b.error), std::string::npos) << dlog;
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("refused device=dev0003 index=3 stage=task reason=local data: "), std::string::npos) << log;
  EXPECT_NE(log.find("start devices=5 of 6 refused=1"), std::string::npos) << log;
  const auto rounds = Rounds();
  ASSERT_EQ(rounds.size(), 2u * kRounds);
  for (const auto& r : rounds) EXPECT_LE(r.agents, 5u);
}

INSTANTIATE_TEST_SUITE_P(
    Shards, BadShardTest,
    ::testing::Values(
        BadShard{"column_count", "temperature,vibration,label,current\n1,2,1,3\n1,2,1\n", "3: 3 columns, the header has 4"},
        BadShard{"not_a_number", "temperature,vibration,label,current\n1,warm,1,3\n", "2:2 (vibration): 'warm' is not a number"},
        BadShard{"nan", "temperature,vibration,label,current\n1,2,1,NaN\n", "2:4 (current): 'NaN' is not a finite number"},
        BadShard{"inf", "temperature,vibration,label,current\ninf,2,1,3\n", "2:1 (temperature): 'inf' is not a finite number"},
        BadShard{"no_rows", "temperature,vibration,label,current\n", " no data rows after the header"},
        BadShard{"label_class", "temperature,vibration,label,current\n1,2,3,4\n",
                 "2:3 (label): label 3 is not a class of binary logistic regression"}),
    [](const ::testing::TestParamInfo<BadShard>& i) { return i.param.name; });

}  // namespace own_data
}  // namespace fedrt::net::testing
