// The [network] table's checks and the key files' hex decoding.
#include <gtest/gtest.h>

#include "fedrt/net/network_config.h"
#include "fedrt/net/tls.h"

namespace fedrt::net {
namespace {

TEST(NetworkConfig, HexAndValidation) {
  bool ok = false;
  EXPECT_EQ(HexToBytes("00ff10", &ok), (std::vector<uint8_t>{0, 255, 16}));
  EXPECT_TRUE(ok);
  HexToBytes("0g", &ok);
  EXPECT_FALSE(ok);
  NetworkConfig n;
  EXPECT_TRUE(ValidateNetwork(n).ok());
  n.quorum = 0;
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("quorum"), std::string::npos);
  n.quorum = 1;
  n.auth = "none";
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.auth"), std::string::npos);
  n.auth = "any";
  n.refusal_log_lines = -1;
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.refusal_log_lines"), std::string::npos);
  n.refusal_log_lines = 0;  // summaries only
  EXPECT_TRUE(ValidateNetwork(n).ok());
  n.refusal_log_interval_ms = 0;
  EXPECT_NE(std::string(ValidateNetwork(n).message()).find("network.refusal_log_interval_ms"), std::string::npos);
}

}  // namespace
}  // namespace fedrt::net
