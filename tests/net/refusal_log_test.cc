// Refusals logged at a bounded rate (coordinator/refusal_log.h): per key, `lines` lines
// per interval, the rest counted into one summary line when the interval ends.
#include "fedrt/coordinator/refusal_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fedrt::net {
namespace {

using std::chrono::milliseconds;

class RefusalLogTest : public ::testing::Test {
 protected:
  RefusalLog log_{3, 1000, [this](const std::string& l) { summaries_.push_back(l); }};
  RefusalLog::Clock::time_point t0_ = RefusalLog::Clock::now();
  std::vector<std::string> summaries_;
  int Admitted(const char* key, int n, milliseconds at) {
    int k = 0;
    for (int i = 0; i < n; ++i) k += log_.admit(key, t0_ + at);
    return k;
  }
};

TEST_F(RefusalLogTest, QuotaPerKeyThenOneSummaryWhenTheIntervalEnds) {
  EXPECT_EQ(Admitted("handshake/not_tls", 500, milliseconds(0)), 3);
  EXPECT_EQ(Admitted("timeout/handshake", 2, milliseconds(10)), 2);  // another key: its own quota
  log_.flush(t0_ + milliseconds(999));
  EXPECT_TRUE(summaries_.empty());  // the interval is not over
  log_.flush(t0_ + milliseconds(1000));
  ASSERT_EQ(summaries_.size(), 1u);  // the key within its quota needs no summary
  EXPECT_EQ(summaries_[0],
            "refusals key=handshake/not_tls count=500 logged=3 interval_ms=1000 (the other lines left out)");
  EXPECT_EQ(Admitted("handshake/not_tls", 4, milliseconds(1500)), 3);  // a fresh quota
  EXPECT_EQ(log_.totals().at("handshake/not_tls"), 504u);
  EXPECT_EQ(log_.totals().at("timeout/handshake"), 2u);
}

TEST_F(RefusalLogTest, AnIntervalEndedByTheNextRefusalIsSummarizedToo) {
  EXPECT_EQ(Admitted("setup", 5, milliseconds(0)), 3);
  EXPECT_EQ(Admitted("setup", 5, milliseconds(1200)), 3);  // no flush in between
  ASSERT_EQ(summaries_.size(), 1u);
  EXPECT_NE(summaries_[0].find("key=setup count=5 logged=3"), std::string::npos) << summaries_[0];
  log_.flush(t0_ + milliseconds(1300), true);  // the coordinator stops: every open interval
  ASSERT_EQ(summaries_.size(), 2u);
  EXPECT_NE(summaries_[1].find("key=setup count=5 logged=3"), std::string::npos) << summaries_[1];
}

TEST_F(RefusalLogTest, ZeroLinesLogsSummariesOnly) {
  std::vector<std::string> out;
  RefusalLog quiet(0, 1000, [&](const std::string& l) { out.push_back(l); });
  for (int i = 0; i < 7; ++i) EXPECT_FALSE(quiet.admit("handshake/eof", t0_));
  quiet.flush(t0_, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("count=7 logged=0"), std::string::npos) << out[0];
}

}  // namespace
}  // namespace fedrt::net
