// The wire maximums are computed in one place (runtime/include/fedrt/config/limits.h);
// the nanopb bounds of runtime/wire/fedrt.options must be exactly those
// numbers, and the firmware's own bounds (runtime/fw/fedrt_fw.options) may
// only tighten them.
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/config/limits.h"
#include "fedrt/secagg/protocol.h"

namespace fedrt::config {
namespace {

// "fedrt.wire.Message.field max_count:N max_size:M" -> {"Message.field max_count": N, ...}
std::map<std::string, long> ReadOptions(const std::string& path) {
  std::map<std::string, long> out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string field, option;
    words >> field;
    const std::string prefix = "fedrt.wire.";
    EXPECT_EQ(field.rfind(prefix, 0), 0u) << line;
    field = field.substr(prefix.size());
    while (words >> option) {
      const size_t colon = option.find(':');
      if (option.compare(0, colon, "descriptorsize") == 0) continue;  // a layout option, not a bound
      out[field + " " + option.substr(0, colon)] = std::stol(option.substr(colon + 1));
    }
  }
  return out;
}

TEST(WireLimits, NanopbBoundsAreTheLimitsHeader) {
  const auto o = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/wire/fedrt.options");
  const std::map<std::string, long> want = {
      {"Hello.device_id max_size", kMaxIdChars + 1},
      {"Task.algorithms max_count", kMaxAlgorithms},
      {"ProblemSpec.label max_size", kMaxLabelChars + 1},
      {"TaskReply.reason max_size", kMaxReasonChars + 1},
      {"RoundAnnouncement.model max_count", kMaxBroadcastScalars},
      {"Update.payload max_count", kMaxSegments},
      {"Update.payload max_size", kMaxSegmentBytes},
      {"RoundResult.model max_count", kMaxDim},
      {"Shutdown.reason max_size", kMaxReasonChars + 1},
      {"Error.message max_size", kMaxReasonChars + 1},
      {"SecAggKeys.peers max_count", 64},
      {"SecAggShares.shares max_count", 64},
      {"SecAggSharesIn.shares max_count", 64},
      {"SecAggCiphertext.ciphertext max_size", static_cast<long>(secagg::kShareWireBytes)},
      {"SecAggMasked.masked max_count", kMaxMaskedScalars},
      {"SecAggUnmaskRequest.survivors max_count", 65},
      {"SecAggUnmask.shares max_count", 65},
      {"SecAggShare.share max_size", static_cast<long>(secagg::kKeyBytes)},
  };
  for (const auto& [key, value] : want) {
    auto it = o.find(key);
    ASSERT_NE(it, o.end()) << "fedrt.options has no bound for " << key;
    EXPECT_EQ(it->second, value) << key;
  }
  EXPECT_EQ(static_cast<long>(secagg::kMaxNeighbours), 64) << "host SecAgg+ tables hold 64 neighbours";
}

TEST(WireLimits, FirmwareBoundsOnlyTighten) {
  const auto base = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/wire/fedrt.options");
  for (const char* file : {"fedrt_fw.options", "fedrt_fw_lsa.options"}) {
    const auto fw = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/fw/" + file);
    for (const auto& [key, value] : fw) {
      auto it = base.find(key);
      ASSERT_NE(it, base.end()) << file << ": a bound for a field the wire leaves unbounded: " << key;
      EXPECT_LE(value, it->second) << file << ": " << key;
    }
  }
}

// The LSA-only firmware's frames still carry every LSA task up to kMaxDim
// (docs/architecture.md, "Families": broadcast theta_t, one segment of at
// most d float64, d SecAgg+ integers).
TEST(WireLimits, LsaFirmwareBoundsHoldAnLsaTaskAtTheMaximumDimension) {
  const auto lsa = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/fw/fedrt_fw_lsa.options");
  EXPECT_GE(lsa.at("RoundAnnouncement.model max_count"), static_cast<long>(kMaxDim));
  EXPECT_GE(lsa.at("Update.payload max_count"), 1);
  EXPECT_GE(lsa.at("Update.payload max_size"), static_cast<long>(8 * kMaxDim));
  EXPECT_GE(lsa.at("SecAggMasked.masked max_count"), static_cast<long>(kMaxDim));
}

}  // namespace
}  // namespace fedrt::config
