// The wire maximums are computed in one place (runtime/include/fedrt/task/limits.h);
// the nanopb bounds of runtime/wire/fedrt.options must be exactly those
// numbers, and the firmware's own bounds (runtime/fw/fedrt_fw.options) may
// only tighten them.
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/task/limits.h"
#include "fedrt/secagg/protocol.h"
#include "fedrt/wire/protobuf_codec.h"
#include "fedrt/wire/frame.h"

namespace fedrt::task {
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
      // A layout option, or a field the image does not decode (type:FT_IGNORE): not a bound.
      if (option.compare(0, colon, "descriptorsize") == 0 || option.compare(0, colon, "type") == 0) continue;
      out[field + " " + option.substr(0, colon)] = std::stol(option.substr(colon + 1));
    }
  }
  return out;
}

TEST(WireLimits, NanopbBoundsAreTheLimitsHeader) {
  const auto o = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/wire/fedrt.options");
  const std::map<std::string, long> want = {
      {"Hello.device_id max_size", kMaxIdChars + 1},
      {"Hello.platform max_size", kMaxPlatformChars + 1},
      {"Task.algorithms max_count", kMaxAlgorithms},
      {"ProblemSpec.label max_size", kMaxLabelChars + 1},
      {"TaskReply.reason max_size", kMaxReasonChars + 1},
      {"RoundAnnouncement.model max_count", kMaxBroadcastScalars},
      {"Update.payload max_count", kMaxSegments},
      {"Update.payload max_size", kMaxSegmentBytes},
      {"Update.payload_bytes max_count", kMaxSegments},
      {"RoundAnnouncement.resume_bytes max_count", kMaxSegments},
      {"Chunk.data max_size", kMcuChunkBytes},
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
  for (const char* file : {"fedrt_fw.options", "fedrt_fw_lsa.options", "fedrt_fw_d4096.options"}) {
    const auto fw = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/fw/" + file);
    for (const auto& [key, value] : fw) {
      auto it = base.find(key);
      ASSERT_NE(it, base.end()) << file << ": a bound for a field the wire leaves unbounded: " << key;
      EXPECT_LE(value, it->second) << file << ": " << key;
    }
  }
}

// The coordinator sends a broadcast of up to one chunk inline (a firmware
// image names kMcuChunkBytes or less in Hello.max_chunk_bytes): every
// image's RoundAnnouncement.model holds that many values
// (docs/architecture.md, "Chunked transfer"; runtime/src/fw/client_impl.h).
TEST(WireLimits, EveryFirmwareImageTakesAOneChunkBroadcastInline) {
  for (const char* file : {"fedrt_fw_lsa.options", "fedrt_fw_d650.options", "fedrt_fw_d4096.options"}) {
    const auto fw = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/fw/" + file);
    EXPECT_GE(fw.at("RoundAnnouncement.model max_count"), static_cast<long>(kMcuChunkBytes / 8)) << file;
  }
  const auto base = ReadOptions(std::string(FEDRT_SOURCE_DIR) + "/runtime/wire/fedrt.options");
  EXPECT_GE(base.at("RoundAnnouncement.model max_count"), static_cast<long>(kMcuChunkBytes / 8));
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

// The Linux profile (protobuf-lite: the coordinator and Linux devices): d up
// to 65536, the vector bounds by the microcontroller's formulas, and the
// longest message of each kind at those bounds, encoded, fits a Linux frame;
// a frame one byte longer is refused with its length.
TEST(WireLimits, LinuxProfileHoldsItsLongestMessagesInOneFrame) {
  EXPECT_GE(kMaxLinuxDim, 65536u);
  EXPECT_EQ(kMaxLinuxSegmentScalars * kMaxDim, kMaxSegmentScalars * kMaxLinuxDim);
  EXPECT_EQ(kMaxLinuxBroadcastScalars * kMaxDim, kMaxBroadcastScalars * kMaxLinuxDim);
  EXPECT_EQ(kMaxLinuxSegmentBytes * kMaxDim, static_cast<uint64_t>(kMaxSegmentBytes) * kMaxLinuxDim);
  EXPECT_EQ(kMaxLinuxMaskedScalars * kMaxDim, static_cast<uint64_t>(kMaxMaskedScalars) * kMaxLinuxDim);
  EXPECT_EQ(kMaxLinuxFrameBytes, 16u * 1024 * 1024);
  std::vector<wire::Envelope> longest(4);
  for (uint32_t i = 0; i < kMaxLinuxBroadcastScalars; ++i) longest[0].mutable_announce()->add_model(-1.0 / 3);
  for (uint32_t k = 0; k < kMaxSegments; ++k)
    longest[1].mutable_update()->add_payload(std::string(kMaxLinuxSegmentBytes, '\xff'));
  for (uint32_t i = 0; i < kMaxLinuxMaskedScalars; ++i) longest[2].mutable_secagg_masked()->add_masked(0xFFFFFFFFu);
  for (uint32_t i = 0; i < kMaxLinuxDim; ++i) longest[3].mutable_result()->add_model(-1.0 / 3);
  for (const wire::Envelope& e : longest) {
    const std::string frame = wire::EncodeFrame(e);
    EXPECT_LE(frame.size() - wire::kFrameHeaderBytes, kMaxLinuxFrameBytes);
    wire::FrameDecoder dec;
    dec.feed(reinterpret_cast<const uint8_t*>(frame.data()), frame.size());
    std::string body;
    wire::WireError err;
    EXPECT_EQ(dec.next(body, err), 1) << err.message;
    EXPECT_EQ(body.size(), frame.size() - wire::kFrameHeaderBytes);
  }
  const uint32_t n = kMaxLinuxFrameBytes + 1;
  const uint8_t hdr[4] = {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
  wire::FrameDecoder dec;
  dec.feed(hdr, 4);
  std::string body;
  wire::WireError err;
  EXPECT_EQ(dec.next(body, err), -1);
  EXPECT_EQ(err.message, "frame length 16777217 exceeds the maximum of 16777216 bytes");
}

}  // namespace
}  // namespace fedrt::task
