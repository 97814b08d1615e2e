// Shamir t-of-n over GF(2^8): field axioms, round trip, every t-subset,
// t - 1 shares independent of the secret, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "fedrt/core/rng.h"
#include "fedrt/secagg/shamir.h"

namespace fedrt::secagg {
namespace {

std::vector<uint8_t> RandomBytes(uint64_t seed, size_t n) {
  CounterRng rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng.next_u64());
  return v;
}

TEST(Shamir, FieldMultiplicationAndInverse) {
  EXPECT_EQ(GfMul(0x57, 0x83), 0xc1);  // FIPS-197 section 4.2 example
  EXPECT_EQ(GfMul(0x57, 0x13), 0xfe);
  for (int a = 1; a < 256; ++a) {
    EXPECT_EQ(GfMul(static_cast<uint8_t>(a), GfInv(static_cast<uint8_t>(a))), 1) << a;
    EXPECT_EQ(GfMul(static_cast<uint8_t>(a), 1), a);
    EXPECT_EQ(GfMul(static_cast<uint8_t>(a), 0), 0);
  }
}

TEST(Shamir, RoundTripWithEveryTSubsetOfFiveOfEight) {
  const uint32_t t = 5, n = 8;
  const size_t len = 32;
  const auto secret = RandomBytes(1, len);
  const auto random = RandomBytes(2, (t - 1) * len);
  std::vector<uint8_t> shares(n * len);
  ASSERT_TRUE(ShamirSplit(secret.data(), len, t, n, random.data(), shares.data()).ok());
  int subsets = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<uint32_t>(__builtin_popcount(mask)) != t) continue;
    std::vector<uint8_t> xs, ys;
    for (uint32_t i = 0; i < n; ++i)
      if (mask >> i & 1) {
        xs.push_back(static_cast<uint8_t>(i + 1));
        ys.insert(ys.end(), shares.begin() + i * len, shares.begin() + (i + 1) * len);
      }
    std::array<uint8_t, 32> out{};
    ASSERT_TRUE(ShamirCombine(xs.data(), ys.data(), t, len, t, out.data()).ok());
    EXPECT_TRUE(std::equal(out.begin(), out.end(), secret.begin())) << "subset " << mask;
    ++subsets;
  }
  EXPECT_EQ(subsets, 56);  // C(8, 5)
  // All eight shares: the three extra ones are checked for consistency.
  std::vector<uint8_t> xs(n);
  for (uint32_t i = 0; i < n; ++i) xs[i] = static_cast<uint8_t>(i + 1);
  std::array<uint8_t, 32> out{};
  ASSERT_TRUE(ShamirCombine(xs.data(), shares.data(), n, len, t, out.data()).ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), secret.begin()));
  // t - 1 shares interpolate to something else (with overwhelming probability).
  ASSERT_TRUE(ShamirCombine(xs.data(), shares.data(), t - 1, len, t - 1, out.data()).ok());
  EXPECT_FALSE(std::equal(out.begin(), out.end(), secret.begin()));
}

TEST(Shamir, HolderXsUpTo255) {
  const uint32_t t = 3;
  const auto secret = RandomBytes(3, 4);
  const auto random = RandomBytes(4, (t - 1) * 4);
  const uint8_t xs[3] = {255, 128, 7};
  uint8_t ys[12], out[4];
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ShamirShare(secret.data(), 4, t, random.data(), xs[i], ys + 4 * i).ok());
  ASSERT_TRUE(ShamirCombine(xs, ys, 3, 4, t, out).ok());
  EXPECT_EQ(0, std::memcmp(out, secret.data(), 4));
}

// Perfect secrecy, exhaustively: over all 2^(8 (t-1)) coefficient choices the
// t - 1 shares take every value exactly once, for any secret, so they are
// consistent with every secret and carry no information about it.
TEST(Shamir, FewerThanTSharesRevealNothing) {
  for (const uint8_t secret : {uint8_t{0}, uint8_t{1}, uint8_t{0xa7}, uint8_t{0xff}}) {
    // t = 2: one share (x = 3).
    std::vector<int> seen(256, 0);
    for (int c = 0; c < 256; ++c) {
      const uint8_t r = static_cast<uint8_t>(c);
      uint8_t y;
      ASSERT_TRUE(ShamirShare(&secret, 1, 2, &r, 3, &y).ok());
      ++seen[y];
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
    // t = 3: two shares (x = 1, 200).
    std::vector<int> pairs(65536, 0);
    for (int c = 0; c < 65536; ++c) {
      const uint8_t r[2] = {static_cast<uint8_t>(c), static_cast<uint8_t>(c >> 8)};
      uint8_t y1, y2;
      ASSERT_TRUE(ShamirShare(&secret, 1, 3, r, 1, &y1).ok());
      ASSERT_TRUE(ShamirShare(&secret, 1, 3, r, 200, &y2).ok());
      ++pairs[y1 | y2 << 8];
    }
    EXPECT_TRUE(std::all_of(pairs.begin(), pairs.end(), [](int k) { return k == 1; })) << int(secret);
  }
}

TEST(Shamir, BadInput) {
  uint8_t s[4] = {1, 2, 3, 4}, r[16] = {0}, sh[8 * 4], out[4];
  EXPECT_EQ(ShamirSplit(s, 4, 5, 4, r, sh).code(), StatusCode::kInvalidArgument);    // n < t
  EXPECT_EQ(ShamirSplit(s, 4, 0, 4, r, sh).code(), StatusCode::kInvalidArgument);    // t = 0
  EXPECT_EQ(ShamirSplit(s, 4, 2, 256, r, sh).code(), StatusCode::kInvalidArgument);  // > 255 holders
  EXPECT_EQ(ShamirShare(s, 4, 2, r, 0, sh).code(), StatusCode::kInvalidArgument);    // x = 0 is the secret
  EXPECT_EQ(ShamirShare(s, 0, 2, r, 1, sh).code(), StatusCode::kInvalidArgument);    // empty secret
  ASSERT_TRUE(ShamirSplit(s, 4, 3, 5, r + 0, sh).ok());
  const uint8_t xs[5] = {1, 2, 3, 4, 5};
  EXPECT_EQ(ShamirCombine(xs, sh, 2, 4, 3, out).code(), StatusCode::kFailedPrecondition);  // too few
  const uint8_t dup[3] = {1, 1, 2};
  EXPECT_EQ(ShamirCombine(dup, sh, 3, 4, 3, out).code(), StatusCode::kInvalidArgument);
  const uint8_t zero[3] = {0, 1, 2};
  EXPECT_EQ(ShamirCombine(zero, sh, 3, 4, 3, out).code(), StatusCode::kInvalidArgument);
  sh[4 * 4 + 2] ^= 0x40;  // corrupt holder 5's share
  const Status st = ShamirCombine(xs, sh, 5, 4, 3, out);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(std::string(st.message()).find("inconsistent"), std::string::npos);
}

}  // namespace
}  // namespace fedrt::secagg
