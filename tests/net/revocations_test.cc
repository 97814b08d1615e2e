// KEYS/revoked.tsv (fedrt/keys/revocations.h) and the prefix fedrt-keys add
// gives new devices (fedrt/keys/provision.h).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fedrt/keys/provision.h"
#include "fedrt/keys/revocations.h"

namespace fedrt::net {
namespace {

namespace fs = std::filesystem;

class RevocationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt-revocations-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "revoked.tsv").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string Read() {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(RevocationsTest, AMissingFileIsAnEmptyList) {
  auto got = ReadRevocations(path_);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(got->empty());
}

TEST_F(RevocationsTest, ListsComeBackAsWrittenWithTheHeaderAndMode0600) {
  const std::vector<Revocation> list = {{"dev0003", 1700000000, "lost"}, {"lab0012", 1700000123.5, ""},
                                        {"dev0001", 1700000200, "revoked by operator"}};
  ASSERT_TRUE(WriteRevocations(path_, list).ok());
  const std::string text = Read();
  EXPECT_EQ(text.rfind("# id\trevoked_at (unix seconds)\treason\n", 0), 0u) << text;
  EXPECT_NE(text.find("dev0003\t1700000000\tlost\n"), std::string::npos) << text;
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(path_ + ".tmp")) << "the temporary file is renamed, not left behind";

  auto got = ReadRevocations(path_);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 3u);
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ((*got)[i].id, list[i].id);
    EXPECT_EQ((*got)[i].revoked_at, list[i].revoked_at);
    EXPECT_EQ((*got)[i].reason, list[i].reason);
  }
}

TEST_F(RevocationsTest, ReasonsAreOneLineOfAtMost200Bytes) {
  EXPECT_EQ(CleanReason("stolen\tfrom\nthe lab\r"), "stolen from the lab ");
  EXPECT_EQ(CleanReason(std::string(300, 'x')).size(), kMaxReasonBytes);
  // 199 ASCII bytes then a two-byte character: cut before it, not inside it.
  const std::string cut = CleanReason(std::string(199, 'a') + "\xc3\xa9" + "zzz");
  EXPECT_EQ(cut, std::string(199, 'a'));

  ASSERT_TRUE(WriteRevocations(path_, {{"dev0000", 1, "a\tb\nc"}}).ok());
  auto got = ReadRevocations(path_);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].reason, "a b c");
}

TEST_F(RevocationsTest, ABadIdIsRefusedAndNothingIsWritten) {
  EXPECT_FALSE(WriteRevocations(path_, {{"dev 1", 1, ""}}).ok());
  EXPECT_FALSE(WriteRevocations(path_, {{"", 1, ""}}).ok());
  EXPECT_FALSE(fs::exists(path_));
}

TEST_F(RevocationsTest, AMalformedLineIsAnErrorNamingFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"# header\ndev0001\t1700000000\tok\ndev0002\n", ":3: no revoked_at field"},
      {"dev0001\tyesterday\tlost\n", ":1: revoked_at 'yesterday' is not a time"},
      {"\ndev0001\t17e8\tok\ndev0002\t1\ta\tb\n", ":3: more than three fields"},
      {"\tt1700000000\tno id\n", ":1: bad device id"},
      {"dev0001\t\tlost\n", ":1: revoked_at '' is not a time"},
  };
  for (const auto& [text, want] : cases) {
    Write(text);
    auto got = ReadRevocations(path_);
    ASSERT_FALSE(got.ok()) << text;
    const std::string m = got.status().message();
    EXPECT_NE(m.find(path_ + want), std::string::npos) << m;
  }
  Write("# a hand-written list\n\ndev0004\t1700000000\n");
  auto ok = ReadRevocations(path_);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 1u) << "an empty reason may be left out";
  EXPECT_EQ((*ok)[0].reason, "");
}

TEST(RegistryPrefixTest, TheSharedPrefixOfIdsThatEndInTheirIndex) {
  auto e = [](const std::string& id, uint32_t index) { return RegistryEntry{id, index, {}}; };
  EXPECT_EQ(RegistryPrefix({}), "dev");
  EXPECT_EQ(RegistryPrefix({e("lab0000", 0), e("lab0001", 1)}), "lab");
  EXPECT_EQ(RegistryPrefix({e("room20000", 0), e("room20007", 7)}), "room2");
  EXPECT_EQ(RegistryPrefix({e("0012", 12)}), "");
  EXPECT_EQ(RegistryPrefix({e("a12345", 12345)}), "a");
  EXPECT_EQ(RegistryPrefix({e("lab0000", 0), e("dev0001", 1)}), "dev") << "mixed prefixes";
  EXPECT_EQ(RegistryPrefix({e("lab0000", 0), e("lab0002", 1)}), "dev") << "an id that is not its index";
  EXPECT_EQ(RegistryPrefix({e("sensor-a", 0)}), "dev");
}

}  // namespace
}  // namespace fedrt::net
