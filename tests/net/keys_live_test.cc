// Acceptance (issue 18, devices while running): a device provisioned with
// `fedrt-keys add` during a run joins it and takes part in later rounds; a
// device revoked with `fedrt-keys revoke` is dropped at once, recorded in the
// state db, refused at its next handshake with the reason logged, and
// included in no round after its revocation. A device whose keys are rotated
// with `fedrt-keys rotate` is dropped, its old PSK refused, and it comes back
// with the new one (read from its files) and its training state.
#include <regex>

#include "fedrt/tls/tls.h"

#include "fedrt/keys/revocations.h"
#include "net_harness.h"

namespace fedrt::net::testing {
namespace {

constexpr const char* kLive = R"(
[problem]
kind = "garnet"
heterogeneity = "high"
agents = 4
[algorithm]
names = ["fedlsa"]
local_steps = 20
[run]
rounds = 70
seed = 7
[network]
start_timeout_ms = 1500
deadline_ms = 1000
)";

class KeysLiveTest : public NetTest {
 protected:
  int Keys(const std::vector<std::string>& args) {
    std::vector<std::string> all = {Bin("fedrt-keys")};
    all.insert(all.end(), args.begin(), args.end());
    return Wait(Spawn(all, dir_ / "keys_live.log"), 60000);
  }
  // The last round closed before `needle` appears in the coordinator's log.
  int RoundBefore(const std::string& needle) {
    const std::string log = ReadFile(dir_ / "coordinator.log");
    const std::string head = log.substr(0, log.find(needle));
    int last = -1;
    std::regex re(" round alg=fedlsa run=0 round=([0-9]+) ");
    for (auto it = std::sregex_iterator(head.begin(), head.end(), re); it != std::sregex_iterator(); ++it)
      last = std::stoi((*it)[1]) - 1;  // the log's rounds are 1-based
    return last;
  }
};

TEST_F(KeysLiveTest, AddedDeviceJoinsAndRevokedDeviceIsRefused) {
  Provision(dir_ / "keys", 3);  // agent 3 has no key yet
  const pid_t co = StartCoordinator(WriteExperiment(kLive), 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  const fs::path log = dir_ / "coordinator.log";
  std::vector<pid_t> dev;
  for (int i = 0; i < 3; ++i) dev.push_back(StartDevice(i, port, {"--delay-ms", "60"}));
  ASSERT_TRUE(WaitForLog(log, " round alg=fedlsa run=0 round=3 ", 60000)) << ReadFile(log);

  // keys add: dev0003 (agent 3, a certificate device) joins the running fleet.
  ASSERT_EQ(Keys({"add", "--keys", (dir_ / "keys").string(), "--count", "1"}), 0) << ReadFile(dir_ / "keys_live.log");
  ASSERT_TRUE(WaitForLog(log, "provisioned device=dev0003 index=3", 10000)) << ReadFile(log);
  dev.push_back(StartDevice(3, port, {"--delay-ms", "60"}));
  ASSERT_TRUE(WaitForLog(log, "ready device=dev0003 index=3", 20000)) << ReadFile(log);
  const int joined = RoundBefore("ready device=dev0003");

  // keys revoke: dev0001 is dropped, and refused when it comes back.
  ASSERT_TRUE(WaitForLog(log, " round alg=fedlsa run=0 round=" + std::to_string(joined + 4) + " ", 60000));
  ASSERT_EQ(Keys({"revoke", "--keys", (dir_ / "keys").string(), Id(1), "--reason", "lost in the field"}), 0)
      << ReadFile(dir_ / "keys_live.log");
  ASSERT_TRUE(WaitForLog(log, "revoked device=dev0001 index=1 reason=lost in the field", 10000)) << ReadFile(log);
  ASSERT_TRUE(WaitForLog(log, "dropped device=dev0001", 10000)) << ReadFile(log);
  const int revoked = RoundBefore("revoked device=dev0001");
  EXPECT_NE(Wait(dev[1], 20000), 0);  // the identity error ends the device
  EXPECT_NE(ReadFile(dir_ / (Id(1) + ".log")).find("is revoked: lost in the field"), std::string::npos)
      << ReadFile(dir_ / (Id(1) + ".log"));
  const pid_t again = StartDevice(1, port, {"--delay-ms", "60"});
  ASSERT_TRUE(WaitForLog(log, "refused device=dev0001", 20000)) << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("stage=handshake reason=revoked: lost in the field"), std::string::npos);
  EXPECT_NE(Wait(again, 20000), 0);

  ASSERT_EQ(Wait(co, 180000), 0) << ReadFile(log);
  // The round open at the revocation did not wait its deadline for dev0001:
  // it closed when the other devices had answered.
  {
    const std::string all = ReadFile(log);
    std::smatch m;
    const std::regex line(" round alg=fedlsa run=0 round=" + std::to_string(revoked + 2) + " [^\n]*closed_by=([a-z]+)");
    ASSERT_TRUE(std::regex_search(all, m, line)) << all;
    EXPECT_EQ(m[1].str(), "all") << "the round open at the revocation waited for the revoked device";
  }
  auto store = StateStore::Open((dir_ / "coordinator.db").string());
  ASSERT_TRUE(store.ok());
  auto rows = (*store)->load_reports();
  ASSERT_TRUE(rows.ok());
  int first3 = -1, last1 = -1, rounds3 = 0;
  for (const MemberRow& r : *rows) {
    const int t = static_cast<int>(r.round);
    if (r.report.device == 3) {
      if (first3 < 0) first3 = t;
      ++rounds3;
    }
    if (r.report.device == 1) last1 = std::max(last1, t);
  }
  EXPECT_GT(first3, joined) << "dev0003 took part before it had a key";
  EXPECT_GE(rounds3, 10) << "dev0003 took part in the later rounds";
  EXPECT_GE(last1, 0);
  EXPECT_LE(last1, revoked + 1) << "dev0001 was included after its revocation (round " << revoked + 1 << ")";
  auto revs = (*store)->load_revocations();
  ASSERT_TRUE(revs.ok());
  ASSERT_EQ(revs->size(), 1u);
  EXPECT_EQ((*revs)[0].id, Id(1));
  EXPECT_EQ((*revs)[0].reason, "lost in the field");
}

TEST_F(KeysLiveTest, RotatedDeviceComesBackWithItsNewKeyAndItsState) {
  std::string cfg = kLive;
  cfg = std::regex_replace(cfg, std::regex("agents = 4"), "agents = 3");
  cfg = std::regex_replace(cfg, std::regex("start_timeout_ms = 1500"), "start_timeout_ms = 60000");
  Provision(dir_ / "keys", 3);
  const pid_t co = StartCoordinator(WriteExperiment(cfg), 0, {});
  const int port = WaitPort();
  ASSERT_GT(port, 0) << ReadFile(dir_ / "coordinator.log");
  const fs::path log = dir_ / "coordinator.log";
  for (int i = 0; i < 3; ++i) StartDevice(i, port, {"--delay-ms", "60"});
  ASSERT_TRUE(WaitForLog(log, " round alg=fedlsa run=0 round=5 ", 60000)) << ReadFile(log);

  // dev0002 (PSK) gets new keys; it reads them from its folder (the test's devices use the keys folder's copy).
  const fs::path psk = dir_ / "keys" / "devices" / Id(2) / "device.psk";
  const std::string old_psk = ReadFile(psk);
  ASSERT_EQ(Keys({"rotate", "--keys", (dir_ / "keys").string(), Id(2)}), 0) << ReadFile(dir_ / "keys_live.log");
  EXPECT_NE(ReadFile(psk), old_psk);
  ASSERT_TRUE(WaitForLog(log, "rotated device=dev0002 index=2", 10000)) << ReadFile(log);
  ASSERT_TRUE(WaitForLog(log, "dropped device=dev0002", 10000)) << ReadFile(log);
  const int rotated = RoundBefore("rotated device=dev0002");
  ASSERT_TRUE(WaitForLog(dir_ / (Id(2) + ".log"), "credentials reloaded", 20000)) << ReadFile(dir_ / (Id(2) + ".log"));

  // The old PSK no longer opens a session.
  const fs::path old_file = dir_ / "old.psk";
  std::ofstream(old_file) << old_psk;
  TlsClient c;
  ASSERT_TRUE(c.init({Id(2), old_file.string(), "", "", ""}).ok());
  EXPECT_FALSE(c.connect("127.0.0.1", static_cast<uint16_t>(port), 3000).ok());
  ASSERT_TRUE(WaitForLog(log, "wrong pre-shared key", 5000)) << ReadFile(log);

  ASSERT_EQ(Wait(co, 180000), 0) << ReadFile(log);
  auto store = StateStore::Open((dir_ / "coordinator.db").string());
  ASSERT_TRUE(store.ok());
  auto rows = (*store)->load_reports();
  ASSERT_TRUE(rows.ok());
  int after = 0;
  for (const MemberRow& r : *rows) after += (r.report.device == 2 && static_cast<int>(r.round) > rotated + 1) ? 1 : 0;
  EXPECT_GE(after, 20) << "dev0002 took part in the rounds after its rotation";
  // It kept its session state: the state it restored on coming back is the one it saved last.
  const std::string dl = ReadFile(dir_ / (Id(2) + ".log"));
  EXPECT_EQ(dl.find("restored alg="), std::string::npos) << "the process never restarted: nothing to restore";
}

}  // namespace
}  // namespace fedrt::net::testing
