// tls/secret_bytes.h: key buffers are zeroized before they go back to the
// heap (destroyed, grown, reassigned), and the PSK readers hand out such buffers.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include <gtest/gtest.h>

#include "fedrt/tls/secret_bytes.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net {
namespace {

// Every block released while a test runs: how many bytes, and how many of them were not zero.
struct Released {
  static inline size_t blocks = 0, bytes = 0, nonzero = 0;
  static void Observe(const void* p, size_t n) {
    ++blocks;
    bytes += n;
    for (size_t i = 0; i < n; ++i) nonzero += static_cast<const uint8_t*>(p)[i] != 0;
  }
};

class SecretBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Released::blocks = Released::bytes = Released::nonzero = 0;
    ZeroizingAllocator<uint8_t>::on_release = &Released::Observe;
  }
  void TearDown() override { ZeroizingAllocator<uint8_t>::on_release = nullptr; }
};

TEST_F(SecretBytesTest, DestroyedGrownAndReassignedBuffersAreZeroedFirst) {
  {
    SecretBytes key(32, 0xA5);
    key.push_back(0x5A);  // grows: the first block is released
    SecretBytes other(48, 0x3C);
    key = std::move(other);  // the grown block is released
    SecretBytes copy = key;  // a second block, released at scope end with `key`
  }
  EXPECT_EQ(Released::blocks, 4u);
  EXPECT_GE(Released::bytes, 32u + 33u + 48u + 48u);
  EXPECT_EQ(Released::nonzero, 0u);
}

TEST_F(SecretBytesTest, PskFilesAndRegistriesAreReadIntoZeroizedBuffers) {
  const std::string dir = ::testing::TempDir() + "/fedrt_secret_bytes_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string hex = "00112233445566778899aabbccddeeff0123456789abcdef0123456789abcdef";
  std::ofstream(dir + "/k.psk") << hex << "\n";
  std::ofstream(dir + "/registry.tsv") << "# id index psk\ndev0000\t0\t" << hex << "\n";
  {
    auto psk = LoadPskFile(dir + "/k.psk");
    ASSERT_TRUE(psk.ok()) << psk.status().message();
    EXPECT_EQ(psk->size(), 32u);
    EXPECT_EQ((*psk)[1], 0x11);
    auto reg = LoadRegistry(dir + "/registry.tsv");
    ASSERT_TRUE(reg.ok()) << reg.status().message();
    ASSERT_EQ(reg->size(), 1u);
    EXPECT_EQ((*reg)[0].psk, *psk);
  }
  std::filesystem::remove_all(dir);
  EXPECT_GE(Released::blocks, 2u);  // both keys went back through the zeroizing allocator
  EXPECT_EQ(Released::nonzero, 0u);
  bool ok = true;
  EXPECT_TRUE(HexToSecret("0g", &ok).empty() || !ok);
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace fedrt::net
