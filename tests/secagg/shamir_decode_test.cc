// Robust Shamir reconstruction (shamir_decode.h): up to floor((m - t) / 2)
// wrong shares are located and the secret recovered exactly; one more is
// refused (never a silently wrong secret in these draws); the shape of the
// errors (whole share, one byte, a share moved onto another polynomial) does
// not matter.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "fedrt/core/rng.h"
#include "fedrt/secagg/shamir.h"
#include "fedrt/secagg/shamir_decode.h"

namespace fedrt::secagg {
namespace {

constexpr size_t kLen = 32;

struct Sharing {
  std::vector<uint8_t> secret, xs, ys;
};

// m shares of a random secret, threshold t, holders at scattered x (as in SecAgg+: 1..k and k + 1).
Sharing Make(uint64_t seed, uint32_t t, size_t m) {
  CounterRng rng(seed);
  Sharing s;
  s.secret.resize(kLen);
  for (auto& b : s.secret) b = static_cast<uint8_t>(rng.next_u64());
  std::vector<uint8_t> random((t - 1) * kLen);
  for (auto& b : random) b = static_cast<uint8_t>(rng.next_u64());
  std::vector<uint8_t> all(255);
  for (int x = 1; x <= 255; ++x) all[x - 1] = static_cast<uint8_t>(x);
  for (size_t i = 0; i < m; ++i) std::swap(all[i], all[i + rng.next_u64() % (255 - i)]);
  s.xs.assign(all.begin(), all.begin() + static_cast<long>(m));
  s.ys.resize(m * kLen);
  for (size_t i = 0; i < m; ++i)
    EXPECT_TRUE(ShamirShare(s.secret.data(), kLen, t, random.data(), s.xs[i], &s.ys[i * kLen]).ok());
  return s;
}

// Corrupts share i in one of three ways (kind 0: every byte, 1: one byte, 2: a share of another secret).
void Corrupt(Sharing& s, size_t i, int kind, CounterRng& rng, uint32_t t) {
  uint8_t* y = &s.ys[i * kLen];
  if (kind == 0) {
    for (size_t j = 0; j < kLen; ++j) y[j] ^= static_cast<uint8_t>(1 + rng.next_u64() % 255);
  } else if (kind == 1) {
    y[rng.next_u64() % kLen] ^= static_cast<uint8_t>(1 + rng.next_u64() % 255);
  } else {
    std::vector<uint8_t> other(kLen), random((t - 1) * kLen);
    for (auto& b : other) b = static_cast<uint8_t>(rng.next_u64());
    for (auto& b : random) b = static_cast<uint8_t>(rng.next_u64());
    ASSERT_TRUE(ShamirShare(other.data(), kLen, t, random.data(), s.xs[i], y).ok());
  }
}

TEST(ShamirDecode, ConsistentSharesDecodeWithNothingOff) {
  const Sharing s = Make(1, 6, 10);
  std::vector<uint8_t> out(kLen);
  std::vector<size_t> off;
  ASSERT_TRUE(ShamirDecode(s.xs.data(), s.ys.data(), 10, kLen, 6, out.data(), off).ok());
  EXPECT_EQ(out, s.secret);
  EXPECT_TRUE(off.empty());
}

// Every (t, m) of the SecAgg+ graphs this repository builds and a few more, every
// error count up to the radius, 40 random placements and kinds each (5 for m > 20).
TEST(ShamirDecode, LocatesUpToHalfTheRedundancyAndRecoversTheSecretExactly) {
  const std::vector<std::pair<uint32_t, size_t>> cases = {{6, 10}, {6, 9}, {23, 45}, {28, 55}, {2, 7}, {1, 5}, {5, 5}};
  CounterRng rng(42);
  int decoded = 0;
  for (const auto& [t, m] : cases) {
    const size_t e_max = (m - t) / 2;
    for (size_t e = 0; e <= e_max; ++e) {
      const int trials = m > 20 ? 5 : 40;
      for (int trial = 0; trial < trials; ++trial) {
        Sharing s = Make(rng.next_u64(), t, m);
        std::set<size_t> wrong;
        while (wrong.size() < e) wrong.insert(rng.next_u64() % m);
        for (size_t i : wrong) Corrupt(s, i, static_cast<int>(rng.next_u64() % 3), rng, t);
        std::vector<uint8_t> out(kLen);
        std::vector<size_t> off;
        const Status st = ShamirDecode(s.xs.data(), s.ys.data(), m, kLen, t, out.data(), off);
        ASSERT_TRUE(st.ok()) << "t=" << t << " m=" << m << " e=" << e << ": " << st.message();
        EXPECT_EQ(out, s.secret) << "t=" << t << " m=" << m << " e=" << e;
        EXPECT_EQ(std::set<size_t>(off.begin(), off.end()), wrong) << "t=" << t << " m=" << m << " e=" << e;
        ++decoded;
      }
    }
  }
  EXPECT_EQ(decoded, 40 * (3 + 2 + 3 + 3 + 1) + 5 * (12 + 14));
}

// One wrong share past the radius: refused as DATA_LOSS, or (when the wrong
// shares happen to fit another polynomial, which whole-share noise does not
// do in these draws) never a different secret reported as clean.
TEST(ShamirDecode, OneErrorPastTheRadiusIsRefused) {
  CounterRng rng(7);
  int refused = 0;
  for (const auto& [t, m] : std::vector<std::pair<uint32_t, size_t>>{{6, 10}, {6, 9}, {23, 45}}) {
    const size_t e = (m - t) / 2 + 1;
    for (int trial = 0; trial < 20; ++trial) {
      Sharing s = Make(rng.next_u64(), t, m);
      for (size_t i = 0; i < e; ++i) Corrupt(s, i, 0, rng, t);
      std::vector<uint8_t> out(kLen);
      std::vector<size_t> off;
      const Status st = ShamirDecode(s.xs.data(), s.ys.data(), m, kLen, t, out.data(), off);
      ASSERT_FALSE(st.ok() && out != s.secret && off.size() <= (m - t) / 2) << "t=" << t << " m=" << m;
      if (!st.ok()) {
        EXPECT_EQ(st.code(), StatusCode::kDataLoss);
        EXPECT_NE(std::string(st.message()).find("cannot decode"), std::string::npos) << st.message();
        ++refused;
      }
    }
  }
  EXPECT_EQ(refused, 60);
}

TEST(ShamirDecode, BadInputIsRefused) {
  const Sharing s = Make(3, 3, 5);
  std::vector<uint8_t> out(kLen);
  std::vector<size_t> off;
  EXPECT_EQ(ShamirDecode(s.xs.data(), s.ys.data(), 2, kLen, 3, out.data(), off).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ShamirDecode(s.xs.data(), s.ys.data(), 5, kLen, 0, out.data(), off).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ShamirDecode(s.xs.data(), s.ys.data(), 5, 0, 3, out.data(), off).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> xs = s.xs;
  xs[1] = xs[0];
  EXPECT_EQ(ShamirDecode(xs.data(), s.ys.data(), 5, kLen, 3, out.data(), off).code(), StatusCode::kInvalidArgument);
  xs[1] = 0;
  EXPECT_EQ(ShamirDecode(xs.data(), s.ys.data(), 5, kLen, 3, out.data(), off).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fedrt::secagg
