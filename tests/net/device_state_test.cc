// The device's state file: two checksummed copies written in turn. A save
// then a load gives back every field; a torn copy (a power cut mid-write)
// falls back to the other one; a session of another size starts a new file;
// a file with no intact copy is an error naming it.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/device/state.h"

namespace fedrt::net {
namespace {

namespace fs = std::filesystem;

SavedSession Make(uint32_t round, uint8_t fill, size_t n = 40) {
  SavedSession s;
  s.fingerprint = 0x1234abcdull;
  s.algorithm = 1;
  s.run = 2;
  s.agent = 3;
  s.pending = true;
  s.pending_round = round;
  s.state.assign(n, fill);
  return s;
}

class DeviceStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt-device-state-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Overwrites `n` bytes at `at` of the state file with garbage.
  void Tear(size_t at, size_t n) {
    std::fstream f(dir_ / "session.state", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    for (size_t i = 0; i < n; ++i) f.put(static_cast<char>(0xA5));
  }
  fs::path dir_;
};

TEST_F(DeviceStateTest, FirstStartHasNoState) {
  auto r = LoadSavedSession(dir_.string());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST_F(DeviceStateTest, SavesAlternateAndTheNewestWins) {
  for (uint32_t t = 0; t < 5; ++t) {
    ASSERT_TRUE(SaveSession(dir_.string(), Make(t, static_cast<uint8_t>(t + 1)), t % 2 == 0).ok());
    auto r = LoadSavedSession(dir_.string());
    ASSERT_TRUE(r.ok() && r->has_value()) << r.status().message();
    const SavedSession& s = **r;
    EXPECT_EQ(s.pending_round, t);
    EXPECT_EQ(s.state, std::vector<uint8_t>(40, static_cast<uint8_t>(t + 1)));
    EXPECT_EQ(s.fingerprint, 0x1234abcdull);
    EXPECT_EQ(s.algorithm, 1u);
    EXPECT_EQ(s.run, 2u);
    EXPECT_EQ(s.agent, 3u);
    EXPECT_TRUE(s.pending);
  }
  EXPECT_EQ(fs::file_size(dir_ / "session.state"), 2u * (256 + 40));
}

// A file saved by the previous format (version 3: byte-wise FNV-1a of the
// header fields and the state) still loads after an upgrade.
TEST_F(DeviceStateTest, AVersion3FileStillLoads) {
  const SavedSession v = Make(7, 0x5c);
  const std::string fields = "fedrt-device-state 3 9 000000001234abcd 1 2 3 1 7 40";
  task::Fnv1a fnv;
  fnv.bytes(fields.data(), fields.size());
  fnv.bytes(v.state.data(), v.state.size());
  const uint64_t h = fnv.value();
  char line[256] = {};
  std::snprintf(line, sizeof line, "%s %016llx\n", fields.c_str(), static_cast<unsigned long long>(h));
  fs::create_directories(dir_);
  std::ofstream f(dir_ / "session.state", std::ios::binary);
  f.write(line, sizeof line);
  f.write(reinterpret_cast<const char*>(v.state.data()), static_cast<std::streamsize>(v.state.size()));
  f.write(std::string(256 + 40, '\0').data(), 256 + 40);
  f.close();
  auto r = LoadSavedSession(dir_.string());
  ASSERT_TRUE(r.ok() && r->has_value()) << r.status().message();
  EXPECT_EQ((*r)->pending_round, 7u);
  EXPECT_EQ((*r)->state, v.state);
}

TEST_F(DeviceStateTest, ATornCopyFallsBackToTheOther) {
  ASSERT_TRUE(SaveSession(dir_.string(), Make(7, 7)).ok());  // slot 0
  ASSERT_TRUE(SaveSession(dir_.string(), Make(8, 8)).ok());  // slot 1
  Tear(256 + 40 + 256 + 5, 3);                                // slot 1's state: round 8 was cut mid-write
  auto r = LoadSavedSession(dir_.string());
  ASSERT_TRUE(r.ok() && r->has_value()) << r.status().message();
  EXPECT_EQ((*r)->pending_round, 7u);
  // Slot 0 torn instead (its header): slot 1 is found from the file's size.
  ASSERT_TRUE(SaveSession(dir_.string(), Make(9, 9)).ok());  // overwrites slot 0 (the older)
  ASSERT_TRUE(SaveSession(dir_.string(), Make(10, 10)).ok());  // slot 1
  Tear(0, 20);
  auto r2 = LoadSavedSession(dir_.string());
  ASSERT_TRUE(r2.ok() && r2->has_value()) << r2.status().message();
  EXPECT_EQ((*r2)->pending_round, 10u);
}

TEST_F(DeviceStateTest, ASessionOfAnotherSizeStartsANewFile) {
  ASSERT_TRUE(SaveSession(dir_.string(), Make(1, 1, 40)).ok());
  ASSERT_TRUE(SaveSession(dir_.string(), Make(2, 2, 96)).ok());
  auto r = LoadSavedSession(dir_.string());
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->state.size(), 96u);
  EXPECT_EQ((*r)->pending_round, 2u);
}

TEST_F(DeviceStateTest, NoIntactCopyIsAnErrorNamingTheFile) {
  ASSERT_TRUE(SaveSession(dir_.string(), Make(1, 1)).ok());
  Tear(0, 30);
  auto r = LoadSavedSession(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("session.state' is damaged: no intact copy"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace fedrt::net
