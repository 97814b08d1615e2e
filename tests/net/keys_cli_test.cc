// fedrt-keys end to end (runtime/apps/fedrt_keys.cc): a fleet provisioned,
// then grown with `add` (next indices, certificates of the same CA, the
// registry replaced whole), trimmed with `revoke` (revoked.tsv) and given
// new keys with `rotate`.

#include <sys/stat.h>

#include <set>

#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>

#include "cli_run.h"
#include "fedrt/keys/revocations.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net::testing {
namespace {

unsigned Mode(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

// Whether `device`'s certificate chains to `ca`, names `cn`, has `serial`
// (-1: any, returned in *serial_hex), and belongs to the key beside it.
void ExpectSignedBy(const fs::path& ca, const fs::path& device_dir, const std::string& cn, int serial,
                    std::string* serial_hex = nullptr, const char* crt_name = "device.crt",
                    const char* key_name = "device.key") {
  mbedtls_x509_crt trust, crt;
  mbedtls_pk_context key;
  mbedtls_x509_crt_init(&trust);
  mbedtls_x509_crt_init(&crt);
  mbedtls_pk_init(&key);
  TlsRandom rng;  // mbedTLS 3.x parses and checks EC keys with blinding
  ASSERT_TRUE(rng.init("keys_cli_test").ok());
  ASSERT_EQ(mbedtls_x509_crt_parse_file(&trust, ca.c_str()), 0);
  ASSERT_EQ(mbedtls_x509_crt_parse_file(&crt, (device_dir / crt_name).c_str()), 0);
  ASSERT_EQ(mbedtls_pk_parse_keyfile(&key, (device_dir / key_name).c_str(), nullptr, mbedtls_ctr_drbg_random, rng.drbg()),
            0);
  uint32_t flags = 0;
  EXPECT_EQ(mbedtls_x509_crt_verify(&crt, &trust, nullptr, cn.c_str(), &flags, nullptr, nullptr), 0)
      << device_dir << ": verification flags " << flags;
  EXPECT_EQ(mbedtls_pk_check_pair(&crt.pk, &key, mbedtls_ctr_drbg_random, rng.drbg()), 0) << device_dir << ": device.key is not device.crt's key";
  if (serial_hex != nullptr) *serial_hex = BytesToHex(crt.serial.p, crt.serial.len);
  if (serial >= 0) {
    ASSERT_EQ(crt.serial.len, 1u);
    EXPECT_EQ(crt.serial.p[0], serial);
  }
  mbedtls_pk_free(&key);
  mbedtls_x509_crt_free(&crt);
  mbedtls_x509_crt_free(&trust);
}

TEST(KeysCliTest, AddGivesTheNextIndicesAndCertificatesOfTheSameCa) {
  const fs::path dir = TestDir();
  CliResult r = RunCli("fedrt-keys", {"--out", "keys", "--devices", "2"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  const std::string before = Slurp(dir / "keys/registry.tsv");

  r = RunCli("fedrt-keys", {"add", "--keys", "keys", "--count", "2"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_EQ(r.out,
            "added dev0002 index=2 dir=keys/devices/dev0002\n"
            "added dev0003 index=3 dir=keys/devices/dev0003\n");
  const std::string after = Slurp(dir / "keys/registry.tsv");
  EXPECT_EQ(after.rfind(before, 0), 0u) << "the existing lines (and their PSKs) are kept as they were";
  auto reg = LoadRegistry((dir / "keys/registry.tsv").string());
  ASSERT_TRUE(reg.ok()) << reg.status().message();
  ASSERT_EQ(reg->size(), 4u);
  std::set<std::string> psks;
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*reg)[i].index, i);
    EXPECT_EQ((*reg)[i].id, "dev000" + std::to_string(i));
    psks.insert(BytesToHex((*reg)[i].psk.data(), (*reg)[i].psk.size()));
  }
  EXPECT_EQ(psks.size(), 4u) << "every device has its own PSK";
  EXPECT_EQ(Mode(dir / "keys/registry.tsv"), 0600u);
  EXPECT_FALSE(fs::exists(dir / "keys/registry.tsv.tmp"));

  for (int i = 2; i < 4; ++i) {
    const fs::path d = dir / "keys/devices" / ("dev000" + std::to_string(i));
    EXPECT_EQ(Mode(d), 0700u) << d;
    for (const char* f : {"ca.crt", "device.crt", "device.key", "device.psk"}) EXPECT_EQ(Mode(d / f), 0600u) << d / f;
    EXPECT_EQ(Slurp(d / "ca.crt"), Slurp(dir / "keys/ca.crt"));
    EXPECT_EQ(Slurp(d / "device.psk"), BytesToHex((*reg)[i].psk.data(), (*reg)[i].psk.size()) + "\n");
    ExpectSignedBy(dir / "keys/ca.crt", d, "dev000" + std::to_string(i), 100 + i);
  }
  ExpectSignedBy(dir / "keys/ca.crt", dir / "keys/devices/dev0000", "dev0000", 100);

  // The registry's prefix is kept; another one may be asked for.
  r = RunCli("fedrt-keys", {"--out", "lab", "--devices", "1", "--prefix", "lab-"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  r = RunCli("fedrt-keys", {"add", "--keys", "lab"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_EQ(r.out, "added lab-0001 index=1 dir=lab/devices/lab-0001\n");
  r = RunCli("fedrt-keys", {"add", "--keys", "lab", "--prefix", "hall"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_EQ(r.out, "added hall0002 index=2 dir=lab/devices/hall0002\n");
}

TEST(KeysCliTest, AddRefusesAFolderItWouldOverwriteAndWritesNothing) {
  const fs::path dir = TestDir();
  ASSERT_EQ(RunCli("fedrt-keys", {"--out", "keys", "--devices", "2"}, dir).rc, 0);
  fs::create_directories(dir / "keys/devices/dev0003");  // left by an earlier, larger fleet
  const std::string before = Slurp(dir / "keys/registry.tsv");
  CliResult r = RunCli("fedrt-keys", {"add", "--keys", "keys", "--count", "2"}, dir);
  EXPECT_EQ(r.rc, 1) << Show(r);
  EXPECT_NE(r.err.find("'keys/devices/dev0003' already exists"), std::string::npos) << Show(r);
  EXPECT_EQ(Slurp(dir / "keys/registry.tsv"), before);
  EXPECT_FALSE(fs::exists(dir / "keys/devices/dev0002")) << "checked before anything is written";

  r = RunCli("fedrt-keys", {"add", "--keys", "nokeys"}, dir);
  EXPECT_EQ(r.rc, 2) << Show(r) << "a --keys naming no folder is a usage error";
  EXPECT_NE(r.err.find("keys folder 'nokeys' not found"), std::string::npos) << Show(r);
}

TEST(KeysCliTest, RevokeListsKnownIdsOnceAndRefusesUnknownOnes) {
  const fs::path dir = TestDir();
  ASSERT_EQ(RunCli("fedrt-keys", {"--out", "keys", "--devices", "4"}, dir).rc, 0);
  const fs::path list = dir / "keys/revoked.tsv";
  CliResult r = RunCli("fedrt-keys", {"revoke", "--keys", "keys", "dev0003", "--reason", "lost"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_EQ(r.out, "revoked dev0003 reason=\"lost\"\n");
  EXPECT_EQ(Mode(list), 0600u);
  auto got = ReadRevocations(list.string());
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].id, "dev0003");
  EXPECT_EQ((*got)[0].reason, "lost");
  EXPECT_GT((*got)[0].revoked_at, 1.6e9);

  const std::string before = Slurp(list);
  r = RunCli("fedrt-keys", {"revoke", "--keys", "keys", "dev0001", "dev0042", "--reason", "x"}, dir);
  EXPECT_EQ(r.rc, 1) << Show(r);
  EXPECT_NE(r.err.find("unknown device id 'dev0042'"), std::string::npos) << Show(r);
  EXPECT_EQ(Slurp(list), before) << "nothing written, not even the known id";

  r = RunCli("fedrt-keys", {"revoke", "--keys", "keys", "dev0003", "dev0000"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_NE(r.out.find("revoked dev0000 reason=\"revoked by operator\""), std::string::npos) << Show(r);
  EXPECT_NE(r.out.find("already revoked dev0003"), std::string::npos) << Show(r);
  auto both = ReadRevocations(list.string());
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u) << "no duplicate";
  EXPECT_EQ((*both)[0].reason, "lost") << "the first revocation is kept";
  EXPECT_EQ((*both)[1].id, "dev0000");

  // A new fleet in the same folder (--force) starts with no revocation.
  ASSERT_EQ(RunCli("fedrt-keys", {"--out", "keys", "--devices", "4", "--force"}, dir).rc, 0);
  EXPECT_FALSE(fs::exists(list));
}

// A folder that holds a fleet is not replaced by accident: without --force
// nothing changes; with it, the old fleet goes whole, stale device folders
// included, and the tool says what it replaced.
TEST(KeysCliTest, ANewFleetDoesNotReplaceAnExistingOneWithoutForce) {
  const fs::path dir = TestDir();
  ASSERT_EQ(RunCli("fedrt-keys", {"--out", "keys", "--devices", "4"}, dir).rc, 0);
  const std::string ca = Slurp(dir / "keys/ca.crt"), registry = Slurp(dir / "keys/registry.tsv");

  CliResult r = RunCli("fedrt-keys", {"--out", "keys", "--devices", "2"}, dir);
  EXPECT_EQ(r.rc, 1) << Show(r);
  EXPECT_NE(r.err.find("already holds a fleet (ca.key, ca.crt, coordinator.key, coordinator.crt, registry.tsv, 4 "
                       "device folders)"),
            std::string::npos)
      << Show(r);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << Show(r);
  EXPECT_NE(r.err.find("fedrt-keys add --keys keys"), std::string::npos) << Show(r);
  EXPECT_EQ(Slurp(dir / "keys/ca.crt"), ca) << "the CA is unchanged";
  EXPECT_EQ(Slurp(dir / "keys/registry.tsv"), registry);
  EXPECT_TRUE(fs::exists(dir / "keys/devices/dev0003"));

  r = RunCli("fedrt-keys", {"--out", "keys", "--devices", "2", "--force"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_NE(r.err.find("replacing the fleet in keys: ca.key, ca.crt, coordinator.key, coordinator.crt, registry.tsv, "
                       "4 device folders"),
            std::string::npos)
      << Show(r);
  EXPECT_NE(Slurp(dir / "keys/ca.crt"), ca) << "a new CA";
  EXPECT_TRUE(fs::exists(dir / "keys/devices/dev0001"));
  EXPECT_FALSE(fs::exists(dir / "keys/devices/dev0002")) << "no device folder of the old fleet is left";
  EXPECT_FALSE(fs::exists(dir / "keys/devices/dev0003"));
  auto now = LoadRegistry((dir / "keys/registry.tsv").string());
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->size(), 2u);
}

TEST(KeysCliTest, RotateGivesNewKeysUnderTheSameIdsAndKeepsTheRest) {
  const fs::path dir = TestDir();
  ASSERT_EQ(RunCli("fedrt-keys", {"--out", "keys", "--devices", "3"}, dir).rc, 0);
  auto before = LoadRegistry((dir / "keys/registry.tsv").string());
  ASSERT_TRUE(before.ok());
  const std::string old_key = Slurp(dir / "keys/devices/dev0001/device.key");
  const std::string old_coordinator = Slurp(dir / "keys/coordinator.crt");

  CliResult r = RunCli("fedrt-keys", {"rotate", "--keys", "keys", "dev0001"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_EQ(r.out, "rotated dev0001 index=1 dir=keys/devices/dev0001\n");
  auto after = LoadRegistry((dir / "keys/registry.tsv").string());
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*after)[i].id, (*before)[i].id);
    EXPECT_EQ((*after)[i].index, i);
    EXPECT_EQ((*after)[i].psk == (*before)[i].psk, i != 1) << "only dev0001's PSK changes";
  }
  EXPECT_EQ(Slurp(dir / "keys/registry.tsv").rfind("# id", 0), 0u) << "the comment line is kept";
  const fs::path d = dir / "keys/devices/dev0001";
  EXPECT_EQ(Slurp(d / "device.psk"), BytesToHex((*after)[1].psk.data(), (*after)[1].psk.size()) + "\n");
  EXPECT_NE(Slurp(d / "device.key"), old_key);
  for (const char* f : {"ca.crt", "device.crt", "device.key", "device.psk"}) EXPECT_EQ(Mode(d / f), 0600u) << d / f;
  std::string serial;
  ExpectSignedBy(dir / "keys/ca.crt", d, "dev0001", -1, &serial);
  EXPECT_NE(serial, "65") << "a reissued certificate has a serial of its own (the first had 100 + 1)";
  EXPECT_EQ(Slurp(dir / "keys/coordinator.crt"), old_coordinator);

  // An unknown id: nothing rotated, not even the known one.
  const std::string reg = Slurp(dir / "keys/registry.tsv");
  const std::string psk2 = Slurp(dir / "keys/devices/dev0002/device.psk");
  r = RunCli("fedrt-keys", {"rotate", "--keys", "keys", "dev0002", "dev0042"}, dir);
  EXPECT_EQ(r.rc, 1) << Show(r);
  EXPECT_NE(r.err.find("unknown device id 'dev0042'"), std::string::npos) << Show(r);
  EXPECT_EQ(Slurp(dir / "keys/registry.tsv"), reg);
  EXPECT_EQ(Slurp(dir / "keys/devices/dev0002/device.psk"), psk2);

  // The coordinator: a new key and certificate of the same CA and name.
  r = RunCli("fedrt-keys", {"rotate", "--keys", "keys", "--coordinator"}, dir);
  ASSERT_EQ(r.rc, 0) << Show(r);
  EXPECT_NE(Slurp(dir / "keys/coordinator.crt"), old_coordinator);
  ExpectSignedBy(dir / "keys/ca.crt", dir / "keys", "fedrt-coordinator", -1, nullptr, "coordinator.crt",
                 "coordinator.key");
  EXPECT_EQ(Mode(dir / "keys/coordinator.key"), 0600u);

  r = RunCli("fedrt-keys", {"rotate", "--keys", "keys"}, dir);
  EXPECT_EQ(r.rc, 2) << Show(r);
  EXPECT_NE(r.err.find("name device ids, or --coordinator"), std::string::npos) << Show(r);
}

TEST(KeysCliTest, BadCommandLinesExitWith2AndSayWhy) {
  const fs::path dir = TestDir();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "nothing to do"},
      {{"--out", "k"}, "--devices is missing"},
      {{"--devices", "3"}, "--out is missing"},
      {{"--out", "k", "--devices", "0"}, "--devices must be in 1..100000, got 0"},
      {{"--out", "k", "add", "--keys", "k"}, "'add' works on --keys DIR"},
      {{"add", "--keys", "k", "--count", "0"}, "--count must be in 1..100000, got 0"},
      {{"add"}, "--keys is required"},
      {{"revoke", "--keys", "k"}, "ids is required"},
      {{"add", "--keys", "k", "--devices", "2"}, "not expected"},
  };
  for (const auto& [args, want] : cases) {
    const CliResult r = RunCli("fedrt-keys", args, dir);
    EXPECT_EQ(r.rc, 2) << Show(r);
    EXPECT_NE(r.err.find(want), std::string::npos) << "wanted '" << want << "'\n" << Show(r);
  }
  EXPECT_FALSE(fs::exists(dir / "k")) << "nothing written";
}

}  // namespace
}  // namespace fedrt::net::testing
