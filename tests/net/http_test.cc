// Acceptance (issue 18, security of the HTTP endpoint): bound to a
// non-loopback address every request without the keys folder's token is
// answered 401; with it the endpoint serves its compiled-in files and JSON,
// and nothing else: no path reaches the keys folder or the file system, and
// oversized or non-GET requests are refused while the coordinator goes on.
#include <sys/stat.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "fedrt/coordinator/network_config.h"
#include "fedrt/privacy/rdp_accountant.h"
#include "http_harness.h"

namespace fedrt::net::testing {
namespace {

TEST_F(HttpTest, LoopbackEndpointIsOpenAndServesTheDashboard) {
  Start("127.0.0.1:0");
  EXPECT_FALSE(fs::exists(dir_ / "keys" / "http.token"));  // no token needed, none made
  const Reply page = Get(http_, "/");
  ASSERT_EQ(page.status, 200) << page.head;
  EXPECT_NE(page.head.find("text/html"), std::string::npos);
  EXPECT_EQ(Get(http_, "/index.html").body, page.body);
  // Every script and style the page names is served (the embedded list and index.html agree).
  const std::regex linked(R"re((?:src|href)="([a-z.]+\.(?:js|css))")re");
  int files = 0;
  for (std::sregex_iterator m(page.body.begin(), page.body.end(), linked), end; m != end; ++m, ++files)
    EXPECT_EQ(Get(http_, "/" + (*m)[1].str()).status, 200) << (*m)[1].str();
  EXPECT_GE(files, 4);  // format.js, charts.js, dashboard.js, dashboard.css
  const Reply run = Get(http_, "/api/run");
  ASSERT_EQ(run.status, 200);
  const auto j = nlohmann::json::parse(run.body);
  EXPECT_EQ(j["status"], "waiting");
  EXPECT_EQ(j["agents"], 2);
  EXPECT_EQ(j["algorithms"][0], "fedlsa");
  const auto devices = nlohmann::json::parse(Get(http_, "/api/devices").body);
  ASSERT_EQ(devices["devices"].size(), 2u);
  EXPECT_EQ(devices["devices"][1]["id"], Id(1));
  EXPECT_EQ(devices["devices"][1]["state"], "offline");
  EXPECT_EQ(Get(http_, "/api/rounds?since=x").status, 400);
  // api/live: the three answers in one, as the page polls them.
  const auto live = nlohmann::json::parse(Get(http_, "/api/live?since=0").body);
  EXPECT_EQ(live["run"]["status"], "waiting");
  EXPECT_EQ(live["run"]["agents"], 2);
  EXPECT_EQ(live["rounds"]["total"], 0);
  EXPECT_TRUE(live["rounds"]["rounds"].empty());
  EXPECT_EQ(live["devices"]["devices"], devices["devices"]);
  EXPECT_EQ(Get(http_, "/api/live?since=-1").status, 400);
  EXPECT_EQ(Get(http_, "/metrics").status, 200);
}

TEST_F(HttpTest, RemoteEndpointAnswers401WithoutTheToken) {
  Start("0.0.0.0:0");
  ASSERT_EQ(token().size(), 64u);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "keys" / "http.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (const char* target : {"/", "/index.html", "/dashboard.js", "/api/run", "/api/devices", "/api/rounds", "/api/live", "/metrics",
                             "/nonexistent"}) {
    const Reply r = Get(http_, target);
    EXPECT_EQ(r.status, 401) << target;
    EXPECT_NE(r.head.find("WWW-Authenticate: Bearer"), std::string::npos) << target;
    ExpectNoSecret(r, target);
    EXPECT_EQ(Get(http_, target, "Authorization: Bearer " + std::string(64, '0') + "\r\n").status, 401) << target;
    EXPECT_EQ(Get(http_, target, "Cookie: fedrt_token=" + token().substr(0, 63) + "\r\n").status, 401) << target;
  }
  EXPECT_EQ(Get(http_, "/api/run", "Authorization: Bearer " + token() + "\r\n").status, 200);
  EXPECT_EQ(Get(http_, "/metrics", "Authorization: Bearer " + token() + "\r\n").status, 200);
  // The browser's way in: /?token= sets the cookie and drops the token from the address.
  const Reply in = Get(http_, "/?token=" + token());
  EXPECT_EQ(in.status, 303);
  EXPECT_NE(in.head.find("Set-Cookie: fedrt_token=" + token() + "; Path=/; HttpOnly; SameSite=Strict"),
            std::string::npos) << in.head;
  EXPECT_NE(in.head.find("Location: /\r"), std::string::npos) << in.head;
  EXPECT_EQ(Get(http_, "/?token=wrong").status, 401);
  EXPECT_EQ(Get(http_, "/api/devices", "Cookie: a=b; fedrt_token=" + token() + "\r\n").status, 200);
}

TEST_F(HttpTest, ServesNothingButItsOwnFiles) {
  Start("127.0.0.1:0");
  (void)Get(http_, "/");
  for (const char* target :
       {"/../keys/registry.tsv", "/..%2fkeys%2fregistry.tsv", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "//etc/passwd",
        "/index.html/../../keys/http.token", "/./../experiment.toml", "/keys/registry.tsv", "/registry.tsv",
        "/coordinator.db", "/dashboard.js%00.png", "/%2e%2e%5c%2e%2e%5cexperiment.toml", "/api/../../keys/ca.key",
        "/....//....//etc/passwd"}) {
    const Reply r = Get(http_, target);
    EXPECT_TRUE(r.status == 404 || r.status == 400) << target << " -> " << r.status;
    ExpectNoSecret(r, target);
  }
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "TRACE"}) {
    const Reply r = Raw(http_, std::string(method) + " /api/run HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.status, 405) << method;
  }
}

TEST_F(HttpTest, OversizedRequestsAreRefusedAndServingGoesOn) {
  Start("127.0.0.1:0");
  const Reply uri = Get(http_, "/" + std::string(100000, 'a'));
  EXPECT_TRUE(uri.status == 431 || uri.status == 414 || uri.status == 400 || uri.status == 0) << uri.status;
  const Reply header = Get(http_, "/api/run", "X-Big: " + std::string(100000, 'b') + "\r\n");
  EXPECT_NE(header.status, 200) << header.status;
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Get(http_, "/api/run", many).status, 431);
  const Reply body = Raw(http_, "POST /api/run HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\nConnection: close\r\n\r\n" +
                                    std::string(1 << 20, 'c'));
  EXPECT_TRUE(body.status == 405 || body.status == 413 || body.status == 0) << body.status;
  // Still serving, and the coordinator still waiting for its devices.
  EXPECT_EQ(Get(http_, "/api/run").status, 200);
  EXPECT_EQ(Wait(co_, 0), -1);
}

TEST_F(HttpTest, BadAddressIsAClearError) {
  Provision(dir_ / "keys", 2);
  for (const char* bad : {"99999", "1.2.3.4.5:80", "localhost:port", "host.example:80"}) {
    const std::string log = std::string("bad_") + std::to_string(std::hash<std::string>{}(bad)) + ".log";
    const pid_t p = StartCoordinator(WriteExperiment(kWaiting), 0, {"--http", bad}, log);
    EXPECT_NE(Wait(p, 20000), 0) << bad;
    EXPECT_NE(ReadFile(dir_ / log).find(std::string("--http '") + bad + "'"), std::string::npos)
        << bad << ": " << ReadFile(dir_ / log);
  }
}

// --http-linger: the finished run's dashboard is still served after the
// run, until the time is up; then the coordinator ends with 0.
TEST_F(HttpTest, AFinishedRunsDashboardLingers) {
  Provision(dir_ / "keys", 2);
  std::string fast(kWaiting);
  fast.replace(fast.find("start_timeout_ms = 600000"), 25, "start_timeout_ms = 60000");
  co_ = StartCoordinator(WriteExperiment(fast), 0, {"--http", "0", "--http-linger", "4"});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "dashboard url=", 10000));
  const std::string log = ReadFile(dir_ / "coordinator.log");
  const size_t at = log.find("dashboard url=http://");
  http_ = std::stoi(log.substr(log.find(':', log.find("//", at) + 2) + 1));
  const pid_t d0 = StartDevice(0, port), d1 = StartDevice(1, port);
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "dashboard stays up for 4 s", 60000)) << ReadFile(dir_ / "coordinator.log");
  EXPECT_EQ(Wait(d0, 20000), 0);
  EXPECT_EQ(Wait(d1, 20000), 0);
  const Reply run = Get(http_, "/api/run");
  EXPECT_EQ(run.status, 200);
  EXPECT_NE(run.body.find("finished"), std::string::npos) << run.body;
  EXPECT_EQ(Wait(co_, 0), -1) << "still running while the dashboard lingers";
  EXPECT_EQ(Wait(co_, 20000), 0);

  // The finished run's state file alone, no device: the coordinator writes
  // the outputs again and serves the run's dashboard while it lingers.
  fs::remove(dir_ / "port");
  co_ = StartCoordinator(WriteExperiment(fast), 0, {"--http", "0", "--http-linger", "3"}, "again.log");
  ASSERT_TRUE(WaitForLog(dir_ / "again.log", "dashboard stays up for 3 s", 30000)) << ReadFile(dir_ / "again.log");
  const std::string again = ReadFile(dir_ / "again.log");
  const size_t at2 = again.find("dashboard url=http://");
  ASSERT_NE(at2, std::string::npos) << again;
  const int http2 = std::stoi(again.substr(again.find(':', again.find("//", at2) + 2) + 1));
  const Reply done = Get(http2, "/api/run");
  EXPECT_EQ(done.status, 200);
  EXPECT_NE(done.body.find("finished"), std::string::npos) << done.body;
  EXPECT_EQ(Wait(co_, 20000), 0);
  co_ = -1;
}

// Central DP-FedAvg: the epsilon each (algorithm, run) spent is a gauge of
// /metrics and a list in api/run, read over HTTP from a finished run that
// lingers; it is the accountant's epsilon after the run's rounds.
TEST_F(HttpTest, PrivacyEpsilonIsAGaugeAndInTheRunView) {
  Provision(dir_ / "keys", 2);
  co_ = StartCoordinator(WriteExperiment("[problem]\nkind = \"lsq\"\nagents = 2\ndim = 3\n[algorithm]\n"
                                         "names = [\"fedavg\"]\n[participation]\nrate = 0.5\n[run]\nrounds = 3\n"
                                         "[network]\nstart_timeout_ms = 60000\nquorum = 0.5\n[privacy]\n"
                                         "mechanism = \"central\"\nclip = 0.1\nnoise_multiplier = 2.0\ntest_seed = 4\n"),
                         0, {"--http", "0", "--http-linger", "4"});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "dashboard url=", 10000));
  const std::string log = ReadFile(dir_ / "coordinator.log");
  const size_t at = log.find("dashboard url=http://");
  http_ = std::stoi(log.substr(log.find(':', log.find("//", at) + 2) + 1));
  StartDevice(0, port);
  StartDevice(1, port);
  ASSERT_TRUE(WaitForLog(dir_ / "coordinator.log", "dashboard stays up for 4 s", 60000)) << ReadFile(dir_ / "coordinator.log");
  auto want = privacy::Epsilon({{0.5, 2.0, 3}}, 1e-5);
  ASSERT_TRUE(want.ok());
  const Reply metrics = Get(http_, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::regex gauge(R"re(fedrt_privacy_epsilon\{algorithm="([^"]+)",run="0"\} (\S+))re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics.body, m, gauge)) << metrics.body;
  EXPECT_NE(metrics.body.find("# TYPE fedrt_privacy_epsilon gauge"), std::string::npos);
  EXPECT_NEAR(std::stod(m[2].str()), want->epsilon, 1e-12 * want->epsilon) << m[0].str();
  const auto run = nlohmann::json::parse(Get(http_, "/api/run").body);
  ASSERT_EQ(run["epsilon"].size(), 1u) << run.dump();
  EXPECT_EQ(run["epsilon"][0]["algorithm"], m[1].str());
  EXPECT_NEAR(run["epsilon"][0]["epsilon"].get<double>(), want->epsilon, 1e-12 * want->epsilon);
  EXPECT_EQ(run["privacy"]["mechanism"], "central");
  EXPECT_EQ(run["privacy"]["private"], false);
  EXPECT_EQ(Wait(co_, 20000), 0);
  co_ = -1;
}

TEST(NetworkConfigLinger, NeedsTheDashboardAndABound) {
  NetworkConfig n;
  n.http_linger_s = 5;
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("needs network.http (--http)"), std::string::npos);
  n.http = "0";
  EXPECT_TRUE(ValidateNetwork(n).ok());
  n.http_linger_s = -1;
  EXPECT_FALSE(ValidateNetwork(n).ok());
}

}  // namespace
}  // namespace fedrt::net::testing
