// fedrt::Device (fedrt/device.h) against a real fedrt-coordinator over TLS on
// loopback: run_one_round() returns each settled round's report, the
// progress callback sees the same rounds, stop() from another thread ends a
// run and the device resumes afterwards, a bad config is refused naming the
// field, and a fleet mixing in-process Devices (a shard file, a caller's
// data source) with fedrt-device processes gives the simulator's iterates
// bit for bit. A user-defined model (fedrt/user_model.h, here through its C
// function pointer, with a compressed uplink) trains on the Devices that
// bring it (a shard file, a data source); fedrt-device and a
// Device with a model of the wrong size refuse the task with the reason.
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "fedrt/data/shard.h"
#include "fedrt/device.h"
#include "fedrt/user_model.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

constexpr int kLocalSteps = 10, kBatch = 4;

class DeviceApiTest : public NetTest {
 protected:
  // Binary logistic shards in R^3 (the label between the features).
  fs::path WriteShards(int agents) {
    const fs::path dir = dir_ / "shards";
    fs::create_directories(dir);
    for (int c = 0; c < agents; ++c) {
      std::ofstream f(dir / ("device-" + std::to_string(c) + ".csv"));
      f << "temperature,vibration,label,current\n";
      for (int j = 0; j < 20 + 3 * c; ++j) {
        const double a = std::sin(0.7 * j + c), b = std::cos(1.3 * j - c) + 0.1 * c, d = std::sin(0.31 * j * j);
        f << a << ',' << b << ',' << (a - 0.5 * b + 0.3 * d + 0.2 * std::sin(5.0 * j) > 0 ? 1 : 0) << ',' << d << '\n';
      }
    }
    return dir;
  }
  fs::path Experiment(int rounds, const std::string& network) {
    return WriteExperiment(
        "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = \"logistic\"\nl2 = 0.01\n"
        "[algorithm]\nnames = [\"fedavg\", \"scaffold\"]\nstep = 0.1\nlocal_steps = " + std::to_string(kLocalSteps) +
        "\nbatch = " + std::to_string(kBatch) + "\n[compression]\nquantizer = \"dither\"\nlevels = 4\n[run]\nrounds = " +
        std::to_string(rounds) + "\nseed = 3\n[network]\nstart_timeout_ms = 60000\n" + network);
  }
  // Device i's config: PSK for even i, certificates for odd i (as StartDevice).
  DeviceConfig Config(int i, int port) {
    const fs::path kd = dir_ / "keys" / "devices" / Id(i);
    DeviceConfig c;
    c.coordinator = "127.0.0.1:" + std::to_string(port);
    c.id = Id(i);
    if (i % 2 == 0) {
      c.credentials.psk_file = (kd / "device.psk").string();
    } else {
      c.credentials.cert_file = (kd / "device.crt").string();
      c.credentials.key_file = (kd / "device.key").string();
      c.credentials.ca_file = (kd / "ca.crt").string();
    }
    c.state_dir = (dir_ / Id(i)).string();
    c.log_level = DeviceLogLevel::kWarn;
    return c;
  }
  static void ExpectWork(const RoundReport& r) {
    EXPECT_EQ(r.examples, uint64_t{kLocalSteps} * kBatch);
    EXPECT_TRUE(std::isfinite(r.loss_before) && r.loss_before > 0) << r.loss_before;
    EXPECT_TRUE(std::isfinite(r.loss_after) && r.loss_after > 0) << r.loss_after;
  }
};

TEST_F(DeviceApiTest, RoundsReportedOneByOneAndTheFleetEqualsTheSimulator) {
  constexpr int kAgents = 4, kRounds = 4;
  const fs::path shards = WriteShards(kAgents);
  const auto cfg = Experiment(kRounds, "deadline_ms = 30000\nquorum = 1.0\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  // Device 0: the caller's examples (labels 0/1 as in the file) through run()
  // and the progress callback.
  auto shard0 = data::ReadCsvShard((shards / "device-0.csv").string(), "label", data::LabelKind::kReal);
  ASSERT_TRUE(shard0.ok()) << shard0.status().message();
  data::ArraySource source0 = shard0->source();
  DeviceConfig c0 = Config(0, port);
  c0.source = &source0;
  auto d0 = Device::Create(c0);
  ASSERT_TRUE(d0.ok()) << d0.status().message();
  std::vector<RoundReport> progress0;
  (*d0)->on_progress([&](const RoundReport& r) { progress0.push_back(r); });
  Status run0 = Status::Internal("not run");
  std::thread t0([&] { run0 = (*d0)->run(); });
  // Device 1: its shard file, one round at a time.
  DeviceConfig c1 = Config(1, port);
  c1.data = (shards / "device-1.csv").string();
  auto d1 = Device::Create(c1);
  ASSERT_TRUE(d1.ok()) << d1.status().message();
  std::vector<RoundReport> progress1;
  (*d1)->on_progress([&](const RoundReport& r) { progress1.push_back(r); });
  std::vector<RoundReport> rounds1;
  Status end1 = Status::Ok();
  std::thread t1([&] {
    for (;;) {
      auto r = (*d1)->run_one_round();
      if (!r.ok()) {
        end1 = r.status();
        return;
      }
      rounds1.push_back(*r);
    }
  });
  for (int i = 2; i < kAgents; ++i)
    StartDevice(i, port, {"--data", (shards / ("device-" + std::to_string(i) + ".csv")).string()});
  const int co_exit = Wait(co, 120000);
  t0.join();
  t1.join();
  ASSERT_EQ(co_exit, 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_TRUE(run0.ok()) << run0.message();
  EXPECT_EQ(end1.code(), StatusCode::kOutOfRange) << end1.message();

  // Every device takes part in every round (participation 1, quorum 1): one
  // report per (algorithm, round), in order, each included.
  ASSERT_EQ(rounds1.size(), 2u * kRounds);
  for (size_t k = 0; k < rounds1.size(); ++k) {
    const RoundReport& r = rounds1[k];
    EXPECT_EQ(r.algorithm_index, k / kRounds);
    EXPECT_EQ(r.algorithm, k < kRounds ? "fedavg" : "scaffold");
    EXPECT_EQ(r.round, k % kRounds);
    EXPECT_EQ(r.run, 0u);
    EXPECT_TRUE(r.included);
    ExpectWork(r);
    // The callback saw the same round, as run_one_round() returned it.
    ASSERT_LT(k, progress1.size());
    EXPECT_EQ(progress1[k].round, r.round);
    EXPECT_EQ(progress1[k].loss_after, r.loss_after);
  }
  ASSERT_EQ(progress0.size(), 2u * kRounds);
  for (const auto& r : progress0) ExpectWork(r);
  // Local SGD lowers the device's own objective in the first round.
  EXPECT_LT(rounds1[0].loss_after, rounds1[0].loss_before);

  const auto rounds = Rounds();
  for (uint32_t a = 0; a < 2; ++a) {
    int identical = 0, compared = 0;
    const double rel = MaxRelDiff(rounds, SimThetas(cfg, a), a, &identical, &compared);
    std::printf("[device api, algorithm %u] rounds compared=%d bit-identical=%d max relative difference=%.3e\n", a,
                compared, identical, rel);
    EXPECT_EQ(compared, kRounds);
    EXPECT_EQ(identical, kRounds);
  }
}

TEST_F(DeviceApiTest, StopFromAnotherThreadEndsTheRunAndTheDeviceResumes) {
  constexpr int kAgents = 2;
  const fs::path shards = WriteShards(kAgents);
  const auto cfg = Experiment(200, "deadline_ms = 30000\nquorum = 1.0\n");
  Provision(dir_ / "keys", kAgents);
  StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  StartDevice(1, port, {"--data", (shards / "device-1.csv").string()});
  DeviceConfig c = Config(0, port);
  c.data = (shards / "device-0.csv").string();
  auto d = Device::Create(c);
  ASSERT_TRUE(d.ok()) << d.status().message();
  std::atomic<int> reports{0};
  std::atomic<bool> stopped{false};
  std::atomic<int> after_stop{0};
  uint32_t last_round = 0;
  (*d)->on_progress([&](const RoundReport& r) {
    if (stopped) ++after_stop;
    last_round = r.round;
    ++reports;
  });
  Status run = Status::Internal("not run");
  std::thread runner([&] { run = (*d)->run(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (reports < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(reports.load(), 3);
  (*d)->stop();  // returns once run() has returned
  stopped = true;
  runner.join();
  EXPECT_EQ(run.code(), StatusCode::kCancelled) << run.message();
  EXPECT_EQ(after_stop.load(), 0);
  // The device resumes from its state: the next settled round comes after the last one.
  const uint32_t before = last_round;
  stopped = false;
  auto next = (*d)->run_one_round();
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->algorithm_index, 0u);
  EXPECT_GT(next->round, before);
  ExpectWork(*next);
  // stop() while nothing runs makes the next call return at once.
  (*d)->stop();
  auto none = (*d)->run_one_round();
  EXPECT_EQ(none.status().code(), StatusCode::kCancelled);
}

// Logistic regression with an intercept as a user model over flat arrays:
// L(w) = mean_j log(1 + exp(-s_j (w_0..2 . x_j + w_3))), s_j = 2 y_j - 1.
double LinearLogistic(void*, const double* w, uint32_t dim, const fedrt_batch* b, double* g) {
  for (uint32_t k = 0; k < dim; ++k) g[k] = 0;
  double loss = 0;
  for (uint32_t j = 0; j < b->count; ++j) {
    const double* x = b->x + j * b->features;
    const double s = 2 * b->y[j] - 1;
    double z = w[3];
    for (uint32_t k = 0; k < 3; ++k) z += w[k] * x[k];
    const double m = -s * z;
    loss += m > 0 ? m + std::log1p(std::exp(-m)) : std::log1p(std::exp(m));
    const double coef = -s / (1 + std::exp(-m)) / b->count;  // d/dz, averaged
    for (uint32_t k = 0; k < 3; ++k) g[k] += coef * x[k];
    g[3] += coef;
  }
  return loss / b->count;
}

TEST_F(DeviceApiTest, AUserModelTrainsOnDevicesThatBringItAndOthersRefuse) {
  constexpr int kAgents = 4, kRounds = 6;
  const fs::path shards = WriteShards(kAgents);
  const auto cfg = WriteExperiment(
      "[data]\nformat = \"csv\"\ntrain = \"shards/device-{id}.csv\"\n[model]\nkind = \"user\"\ndim = 4\n"
      "[algorithm]\nnames = [\"fedavg\", \"scaffold-rr\"]\nstep = 0.3\nlocal_steps = 10\nbatch = 4\n"
      "[compression]\nquantizer = \"dither\"\nlevels = 8\n[run]\nrounds = " +
      std::to_string(kRounds) + "\nseed = 5\n[network]\ndeadline_ms = 30000\nquorum = 0.5\nstart_timeout_ms = 60000\n");
  Provision(dir_ / "keys", kAgents);
  const pid_t co = StartCoordinator(cfg, 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  // Device 0: fedrt-device has no code for the model.
  const pid_t plain = StartDevice(0, port, {"--data", (shards / "device-0.csv").string()});
  fedrt::UserModel model;
  model.dim = 4;
  model.features = 3;
  model.c_loss_and_grad = &LinearLogistic;
  fedrt::UserModel wrong = model;
  wrong.dim = 3;
  // Device 3 gives its examples as a data source (labels as in the file).
  auto shard3 = data::ReadCsvShard((shards / "device-3.csv").string(), "label", data::LabelKind::kReal);
  ASSERT_TRUE(shard3.ok()) << shard3.status().message();
  data::ArraySource source3 = shard3->source();
  std::vector<std::unique_ptr<Device>> devices;
  for (int i = 1; i < kAgents; ++i) {
    DeviceConfig c = Config(i, port);
    if (i == 3) c.source = &source3;
    else c.data = (shards / ("device-" + std::to_string(i) + ".csv")).string();
    c.model = i == 2 ? &wrong : &model;
    auto d = Device::Create(c);
    ASSERT_TRUE(d.ok()) << d.status().message();
    devices.push_back(d.take());
  }
  std::vector<std::vector<RoundReport>> reports(devices.size());
  std::vector<Status> status(devices.size(), Status::Ok());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < devices.size(); ++k) {
    devices[k]->on_progress([&reports, k](const RoundReport& r) { reports[k].push_back(r); });
    threads.emplace_back([&, k] { status[k] = devices[k]->run(); });
  }
  const int co_exit = Wait(co, 120000);
  for (auto& t : threads) t.join();
  ASSERT_EQ(co_exit, 0) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Wait(plain, 10000), 1);  // refused: a run failure
  EXPECT_NE(ReadFile(dir_ / "dev0000.log").find("only a program built on fedrt::Device with the model can train it"),
            std::string::npos)
      << ReadFile(dir_ / "dev0000.log");
  EXPECT_EQ(status[1].code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(status[1].message()).find("the user model has 3 parameters, the task's model.dim is 4"),
            std::string::npos)
      << status[1].message();
  const std::string log = ReadFile(dir_ / "coordinator.log");
  EXPECT_NE(log.find("start devices=2 of 4 refused=2"), std::string::npos) << log;
  for (size_t k : {size_t{0}, size_t{2}}) {
    EXPECT_TRUE(status[k].ok()) << status[k].message();
    ASSERT_EQ(reports[k].size(), 2u * kRounds) << k;  // every round of both algorithms
    for (const RoundReport& r : reports[k]) ExpectWork(r);
    EXPECT_LT(reports[k][0].loss_after, reports[k][0].loss_before);
    EXPECT_LT(reports[k][kRounds - 1].loss_before, reports[k][0].loss_before);  // the global model improved on f_c
  }
  // No error metric on the coordinator; train_loss from the devices' reports.
  std::istringstream m(ReadFile(dir_ / "out" / "metrics.csv"));
  std::string line;
  std::getline(m, line);
  EXPECT_EQ(line, "algorithm,run,round,error,agents,bits_up,bits_down,train_loss,local_loss");
  double first = 0, last = 0;
  int rows = 0;
  while (std::getline(m, line)) {
    const std::vector<std::string> f = Cells(line);
    ASSERT_EQ(f.size(), 9u) << line;
    EXPECT_EQ(f[3], "nan") << line;
    if (f[0] != "fedavg" || f[2] == "0") continue;
    last = std::stod(f[7]);
    if (++rows == 1) first = last;
  }
  EXPECT_EQ(rows, kRounds);
  EXPECT_LT(last, first);
}

TEST_F(DeviceApiTest, BadConfigIsRefusedNamingTheField) {
  Provision(dir_ / "keys", 2);
  struct Case {
    std::function<void(DeviceConfig&)> edit;
    std::string field;
  };
  data::ArraySource empty;
  const std::vector<Case> cases = {
      {[](DeviceConfig& c) { c.coordinator = "127.0.0.1"; }, "coordinator: expected HOST:PORT"},
      {[](DeviceConfig& c) { c.coordinator = "127.0.0.1:99999"; }, "coordinator: expected HOST:PORT"},
      {[](DeviceConfig& c) { c.id.clear(); }, "id: empty"},
      {[](DeviceConfig& c) { c.credentials.psk_file += ".missing"; }, "credentials.psk_file: '"},
      {[](DeviceConfig& c) { c.credentials = {}; }, "credentials: none given"},
      {[](DeviceConfig& c) { c.data = "no/such/shard.csv"; }, "data: 'no/such/shard.csv' not found"},
      {[&](DeviceConfig& c) { c.source = &empty; }, "source: no examples"},
      {[](DeviceConfig& c) { c.give_up_ms = 0; }, "give_up_ms: must be positive"},
  };
  for (const Case& k : cases) {
    DeviceConfig c = Config(0, 4000);
    k.edit(c);
    auto d = Device::Create(c);
    ASSERT_FALSE(d.ok()) << k.field;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(d.status().message()).find(k.field), std::string::npos) << d.status().message();
  }
  DeviceConfig cert = Config(1, 4000);
  cert.credentials.ca_file.clear();
  auto d = Device::Create(cert);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(std::string(d.status().message()).find("credentials.ca_file"), std::string::npos) << d.status().message();
  EXPECT_TRUE(Device::Create(Config(0, 4000)).ok());  // the good config, for contrast
}

}  // namespace
}  // namespace fedrt::net::testing
