// Quantizers, the wire codec and compressed differences (docs/algorithms.md 4).
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/compression/payload.h"
#include "fedrt/compression/diana.h"

namespace fedrt::compression {
namespace {

std::vector<double> RandomVector(int d, uint64_t key, double scale) {
  CounterRng rng(key);
  std::vector<double> v(d);
  for (double& x : v) x = scale * (2.0 * rng.uniform() - 1.0);
  return v;
}

double Norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

// Exact moments of dithering given the float32 wire norm r: coordinate i is
// r/s (l_i + B_i) with B_i ~ Bernoulli(p_i), so Var_i = (r/s)^2 p_i (1 - p_i).
struct DitherMoments {
  std::vector<double> sd;  // per-coordinate standard deviation
  double total_var = 0;    // E||Q(v) - v||^2
};
DitherMoments Exact(const std::vector<double>& v, uint32_t s) {
  double r = 0;
  for (double x : v) r += x * x;
  r = std::sqrt(r);
  float rf = static_cast<float>(r);
  if (static_cast<double>(rf) < r) rf = std::nextafter(rf, INFINITY);
  DitherMoments m;
  for (double x : v) {
    const double u = rf > 0 ? s * std::fabs(x) / rf : 0;
    const double p = u - std::floor(u);
    const double var = (rf / double(s)) * (rf / double(s)) * p * (1 - p);
    m.sd.push_back(std::sqrt(var));
    m.total_var += var;
  }
  return m;
}

struct Case {
  int d;
  uint32_t s;
  double scale;
  bool elias;
};

// Fixed-seed Monte Carlo over M draws. Tolerances: the per-coordinate mean has
// standard error sd_i / sqrt(M), we allow 5 standard errors (a false alarm
// has probability < 1e-6 per coordinate); the mean squared error has standard
// error sqrt(Var(e) / M) with e = ||Q - v||^2 in [0, d (r/s)^2], so
// Var(e) <= E[e^2] <= d (r/s)^2 E[e]: we allow 5 of those (rare events such as
// a level flip of probability 1e-8 make the empirical error useless).
void CheckDither(const std::vector<double>& v, uint32_t s, bool elias, int M, uint64_t seed) {
  const int d = static_cast<int>(v.size());
  QuantizerSpec q;
  q.kind = QuantizerKind::kDither;
  q.levels = s;
  q.elias_gamma = elias;
  std::vector<uint8_t> buf(MaxPayloadBytes(q, d));
  std::vector<double> dec(d), dec2(d), mean(d, 0.0);
  double se_sum = 0, se_sq = 0;
  for (int k = 0; k < M; ++k) {
    CounterRng rng(seed, 0, 0, static_cast<uint64_t>(k), RngStream::kCompression);
    auto n = Encode<double>(q, v.data(), d, rng, buf.data(), buf.size(), dec.data());
    ASSERT_TRUE(n.ok()) << n.status().message();
    ASSERT_TRUE(Decode<double>(q, buf.data(), *n, d, dec2.data()).ok());
    ASSERT_EQ(0, std::memcmp(dec.data(), dec2.data(), sizeof(double) * d)) << "codec must round-trip exactly";
    if (!elias) {
      ASSERT_EQ(*n, MaxPayloadBytes(q, d));
    }
    double e = 0;
    for (int i = 0; i < d; ++i) {
      mean[i] += dec[i];
      e += (dec[i] - v[i]) * (dec[i] - v[i]);
    }
    se_sum += e;
    se_sq += e * e;
  }
  const DitherMoments ex = Exact(v, s);
  for (int i = 0; i < d; ++i) {
    const double m = mean[i] / M;
    const double tol = 5.0 * ex.sd[i] / std::sqrt(double(M)) + 1e-12 * std::fabs(v[i]) + 1e-300;
    EXPECT_NEAR(m, v[i], tol) << "coordinate " << i << " d=" << d << " s=" << s;
  }
  const double mse = se_sum / M;
  float rf = 0;
  std::memcpy(&rf, buf.data(), 4);  // the wire norm (little-endian host)
  const double step2 = (double(rf) / s) * (double(rf) / s);
  const double mse_se = std::sqrt(d * step2 * Exact(v, s).total_var / M);
  (void)se_sq;
  const double omega = Omega(q, d);
  const double nv = Norm2(v);
  EXPECT_NEAR(mse, ex.total_var, 5 * mse_se + 1e-12 * ex.total_var) << "d=" << d << " s=" << s;
  // Theory: E||Q(v)-v||^2 <= omega ||v||^2, up to the float32 round-up of the
  // norm (relative 2^-23 in r, so 2^-22 in the bound).
  EXPECT_LE(ex.total_var, omega * nv * (1 + 1e-6)) << "d=" << d << " s=" << s;
  EXPECT_LE(mse, omega * nv * (1 + 1e-6) + 5 * mse_se) << "d=" << d << " s=" << s;
}

TEST(Dithering, UnbiasedAndVarianceBoundedForSeveralDimsAndLevels) {
  const Case cases[] = {{2, 1, 1.0, false},  {8, 1, 1.0, false},  {8, 7, 3.0, true},   {16, 4, 0.5, false},
                        {64, 8, 2.0, false}, {64, 2, 1.0, true},  {200, 3, 1.0, false}, {7, 1000, 1.0, true}};
  uint64_t seed = 11;
  for (const Case& c : cases) {
    CheckDither(RandomVector(c.d, seed, c.scale), c.s, c.elias, 4000, seed + 1000);
    ++seed;
  }
}

TEST(Dithering, EdgeCases) {
  // very large and very small norms (still inside float32's range)
  CheckDither(RandomVector(16, 3, 1e30), 4, false, 2000, 1);
  CheckDither(RandomVector(16, 4, 1e-30), 4, true, 2000, 2);
  // one-hot (all mass on one coordinate)
  std::vector<double> one_hot(10, 0.0);
  one_hot[3] = -2.7;
  CheckDither(one_hot, 3, false, 2000, 3);
  // one-hot with a float32-exact value is transmitted exactly
  one_hot[3] = -2.5;
  QuantizerSpec q{QuantizerKind::kDither, 3, false, 8, 1.0};
  std::vector<uint8_t> buf(MaxPayloadBytes(q, 10));
  std::vector<double> dec(10);
  CounterRng rng(5);
  ASSERT_TRUE(Encode<double>(q, one_hot.data(), 10, rng, buf.data(), buf.size(), dec.data()).ok());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(dec[i], one_hot[i]);
  // zero vector: zero norm, zero levels, decoded exactly
  std::vector<double> zero(12, 0.0), out(12, 1.0);
  buf.resize(MaxPayloadBytes(q, 12));
  dec.resize(12);
  auto n = Encode<double>(q, zero.data(), 12, rng, buf.data(), buf.size(), dec.data());
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE(Decode<double>(q, buf.data(), *n, 12, out.data()).ok());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[i], 0.0);
  // norms outside float32 and NaN inputs are refused, not silently wrapped
  std::vector<double> huge(4, 1e300), nan(4, 0.0);
  nan[1] = std::nan("");
  EXPECT_EQ(Encode<double>(q, huge.data(), 4, rng, buf.data(), buf.size(), dec.data()).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_FALSE(Encode<double>(q, nan.data(), 4, rng, buf.data(), buf.size(), dec.data()).ok());
}

TEST(Dithering, WorksInFloat) {
  QuantizerSpec q{QuantizerKind::kDither, 5, true, 8, 1.0};
  const int d = 32;
  std::vector<float> v(d), dec(d), dec2(d);
  std::vector<double> mean(d, 0.0);
  for (int i = 0; i < d; ++i) v[i] = static_cast<float>(std::sin(1.0 + i));
  std::vector<uint8_t> buf(MaxPayloadBytes(q, d));
  const int M = 4000;
  for (int k = 0; k < M; ++k) {
    CounterRng rng(9, 0, 0, k, RngStream::kCompression);
    auto n = Encode<float>(q, v.data(), d, rng, buf.data(), buf.size(), dec.data());
    ASSERT_TRUE(n.ok());
    ASSERT_TRUE(Decode<float>(q, buf.data(), *n, d, dec2.data()).ok());
    ASSERT_EQ(0, std::memcmp(dec.data(), dec2.data(), sizeof(float) * d));
    for (int i = 0; i < d; ++i) mean[i] += dec[i];
  }
  // |Q(v)_i - v_i| <= r/s <= sqrt(d)/5 < 1.2: 5 standard errors of the mean.
  for (int i = 0; i < d; ++i) EXPECT_NEAR(mean[i] / M, v[i], 5 * 0.6 / std::sqrt(double(M)));
}

// Bits actually written, computed independently from the decoded levels.
size_t ExpectedDitherBytes(const std::vector<double>& dec, uint32_t s, bool elias, float rf) {
  size_t bits = 0;
  for (double x : dec) {
    const uint32_t l = rf > 0 ? static_cast<uint32_t>(std::lround(std::fabs(x) / rf * s)) : 0;
    if (elias) bits += 2 * (BitWidth(l + 1) - 1) + 1 + (l ? 1 : 0);
    else bits += 1 + BitWidth(s);
  }
  return 4 + (bits + 7) / 8;
}

TEST(Codec, ByteCountEqualsTheBitsOfTheFields) {
  for (bool elias : {false, true}) {
    for (uint32_t s : {1u, 2u, 7u, 16u}) {
      QuantizerSpec q{QuantizerKind::kDither, s, elias, 8, 1.0};
      const auto v = RandomVector(37, s + 100, 1.0);
      std::vector<uint8_t> buf(MaxPayloadBytes(q, 37));
      std::vector<double> dec(37);
      CounterRng rng(s);
      auto n = Encode<double>(q, v.data(), 37, rng, buf.data(), buf.size(), dec.data());
      ASSERT_TRUE(n.ok());
      float rf;
      std::memcpy(&rf, buf.data(), 4);  // little-endian host
      EXPECT_EQ(*n, ExpectedDitherBytes(dec, s, elias, rf)) << "s=" << s << " elias=" << elias;
    }
  }
  QuantizerSpec q{QuantizerKind::kRounding, 4, false, 3, 1.0};
  const auto v = RandomVector(11, 5, 1.0);
  std::vector<uint8_t> buf(64);
  std::vector<double> dec(11), out(11);
  CounterRng rng(1);
  auto n = Encode<double>(q, v.data(), 11, rng, buf.data(), buf.size(), dec.data());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, (11u * 3 + 7) / 8);
  ASSERT_TRUE(Decode<double>(q, buf.data(), *n, 11, out.data()).ok());
  EXPECT_EQ(0, std::memcmp(dec.data(), out.data(), sizeof(double) * 11));
}

TEST(StochasticRounding, UnbiasedInsideTheClipWithBoundedVariance) {
  const int d = 6, M = 20000;
  const double c = 2.0;
  for (uint32_t b : {1u, 2u, 4u, 8u}) {
    QuantizerSpec q{QuantizerKind::kRounding, 4, false, b, c};
    std::vector<double> v = {-2.0, -1.3, -0.01, 0.0, 0.77, 1.999};
    std::vector<double> dec(d), mean(d, 0.0);
    std::vector<uint8_t> buf(MaxPayloadBytes(q, d));
    const double delta = 2 * c / ((1u << b) - 1);
    for (int k = 0; k < M; ++k) {
      CounterRng rng(77, 0, 0, k, RngStream::kCompression);
      ASSERT_TRUE(Encode<double>(q, v.data(), d, rng, buf.data(), buf.size(), dec.data()).ok());
      for (int i = 0; i < d; ++i) {
        mean[i] += dec[i];
        ASSERT_LE(std::fabs(dec[i] - v[i]), delta * (1 + 1e-12));  // one grid step at most
      }
    }
    // sd <= Delta/2 per coordinate: 5 standard errors.
    for (int i = 0; i < d; ++i) EXPECT_NEAR(mean[i] / M, v[i], 5 * 0.5 * delta / std::sqrt(double(M))) << b;
  }
  // outside the clip the value is clipped (documented bias)
  QuantizerSpec q{QuantizerKind::kRounding, 4, false, 4, 1.0};
  double big = 5.0, dec = 0;
  uint8_t buf[1];
  CounterRng rng(3);
  ASSERT_TRUE(Encode<double>(q, &big, 1, rng, buf, 1, &dec).ok());
  EXPECT_DOUBLE_EQ(dec, 1.0);
}

// --- malformed payloads ----------------------------------------------------
class MalformedDither : public ::testing::Test {
 protected:
  void SetUp() override {
    q_ = QuantizerSpec{QuantizerKind::kDither, 5, false, 8, 1.0};  // width 3: levels 6, 7 impossible
    v_ = RandomVector(d_, 42, 1.0);
    buf_.assign(MaxPayloadBytes(q_, d_) + 8, 0);
    CounterRng rng(1);
    std::vector<double> dec(d_);
    auto n = Encode<double>(q_, v_.data(), d_, rng, buf_.data(), buf_.size(), dec.data());
    ASSERT_TRUE(n.ok());
    n_ = *n;
    ASSERT_TRUE(Decode<double>(q_, buf_.data(), n_, d_, out_.data()).ok());
  }
  Status decode(const std::vector<uint8_t>& b, size_t n) { return Decode<double>(q_, b.data(), n, d_, out_.data()); }
  void set_norm(float f) { std::memcpy(buf_.data(), &f, 4); }
  static constexpr int d_ = 10;
  QuantizerSpec q_;
  std::vector<double> v_;
  std::vector<uint8_t> buf_;
  std::vector<double> out_ = std::vector<double>(d_);
  size_t n_ = 0;
};

TEST_F(MalformedDither, TruncatedAndWrongLengthAreRejected) {
  for (size_t n = 0; n < n_; ++n) {
    // exact-size copies so that ASan would catch any read past the end
    std::vector<uint8_t> t(buf_.begin(), buf_.begin() + n);
    Status st = Decode<double>(q_, t.data(), n, d_, out_.data());
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << n;
    EXPECT_NE(std::string(st.message()).find("truncated"), std::string::npos) << st.message();
  }
  EXPECT_EQ(decode(buf_, n_ + 1).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Decode<double>(q_, buf_.data(), n_, d_ + 1, out_.data()).code(), StatusCode::kDataLoss);  // wrong dim
}

TEST_F(MalformedDither, ImpossibleLevelsAndBadNormsAreRejected) {
  // level field of coordinate 0 (bits 1..3 after the norm) set to 7 > s = 5
  std::vector<uint8_t> b = buf_;
  b[4] = static_cast<uint8_t>((b[4] & ~0x0E) | (7 << 1));
  Status st = decode(b, n_);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(std::string(st.message()).find("level exceeds"), std::string::npos) << st.message();
  // sign bit on a zero level
  b = buf_;
  b[4] = static_cast<uint8_t>((b[4] & ~0x0F) | 0x01);
  EXPECT_EQ(decode(b, n_).code(), StatusCode::kDataLoss);
  for (float bad : {std::nanf(""), INFINITY, -INFINITY, -1.0f}) {
    set_norm(bad);
    st = decode(buf_, n_);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << bad;
    EXPECT_NE(std::string(st.message()).find("norm"), std::string::npos) << st.message();
  }
  set_norm(0.0f);  // zero norm with nonzero levels
  EXPECT_EQ(decode(buf_, n_).code(), StatusCode::kDataLoss);
}

TEST(MalformedPayload, NonzeroPaddingEliasAndRoundingAreRejected) {
  // d = 3, s = 1: 3 * 2 = 6 bits -> the top two bits of byte 4 are padding.
  QuantizerSpec q{QuantizerKind::kDither, 1, false, 8, 1.0};
  std::vector<double> v = {1.0, -2.0, 0.5}, dec(3), out(3);
  std::vector<uint8_t> buf(MaxPayloadBytes(q, 3));
  CounterRng rng(1);
  auto n = Encode<double>(q, v.data(), 3, rng, buf.data(), buf.size(), dec.data());
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 5u);
  buf[4] |= 0x80;
  EXPECT_EQ(Decode<double>(q, buf.data(), *n, 3, out.data()).code(), StatusCode::kDataLoss);
  // Elias gamma: a run of zeros longer than any code for s + 1
  QuantizerSpec e{QuantizerKind::kDither, 3, true, 8, 1.0};
  std::vector<uint8_t> z = {0, 0, 0x80, 0x3f, 0x00, 0x00};  // norm 1.0, then only zero bits
  EXPECT_EQ(Decode<double>(e, z.data(), z.size(), 3, out.data()).code(), StatusCode::kDataLoss);
  // Elias gamma: extra trailing byte
  std::vector<uint8_t> eb(MaxPayloadBytes(e, 3) + 1);
  auto en = Encode<double>(e, v.data(), 3, rng, eb.data(), eb.size(), dec.data());
  ASSERT_TRUE(en.ok());
  EXPECT_TRUE(Decode<double>(e, eb.data(), *en, 3, out.data()).ok());
  EXPECT_EQ(Decode<double>(e, eb.data(), *en + 1, 3, out.data()).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Decode<double>(e, eb.data(), *en - 1, 3, out.data()).code(), StatusCode::kDataLoss);
  // Rounding: exact length only
  QuantizerSpec r{QuantizerKind::kRounding, 1, false, 5, 1.0};
  std::vector<uint8_t> rb(2, 0);
  EXPECT_TRUE(Decode<double>(r, rb.data(), 2, 3, out.data()).ok());
  EXPECT_EQ(Decode<double>(r, rb.data(), 1, 3, out.data()).code(), StatusCode::kDataLoss);
  rb[1] = 0x80;  // padding bit (bit 15 of 15 used bits)
  EXPECT_EQ(Decode<double>(r, rb.data(), 2, 3, out.data()).code(), StatusCode::kDataLoss);
  // Raw: NaN
  QuantizerSpec raw{};
  double nan = std::nan("");
  uint8_t nb[8];
  std::memcpy(nb, &nan, 8);
  EXPECT_EQ(Decode<double>(raw, nb, 8, 1, out.data()).code(), StatusCode::kDataLoss);
}

// --- compressed differences -------------------------------------------------
TEST(CompressedDifference, BothSidesKeepTheSameMemoryAndTheErrorVanishesWithControlVariates) {
  const int d = 16;
  QuantizerSpec q{QuantizerKind::kDither, 2, false, 8, 1.0};
  const auto g = RandomVector(d, 8, 3.0);
  for (bool cv : {false, true}) {
    std::vector<uint8_t> mem(4096);
    Arena arena(mem.data(), mem.size());
    auto agent = CompressedDifference<double>::create(arena, d, q, cv);
    auto server = CompressedDifference<double>::create(arena, d, q, cv);
    ASSERT_TRUE(agent.ok() && server.ok());
    EXPECT_DOUBLE_EQ(agent->alpha(), 1.0 / (1.0 + Omega(q, d)));
    std::vector<uint8_t> wire(agent->max_payload_bytes());
    std::vector<double> ga(d), gs(d);
    double late_err = 0;
    for (int t = 0; t < 200; ++t) {
      CounterRng rng(1, 0, 0, t, RngStream::kCompression);
      auto n = agent->encode(g.data(), rng, wire.data(), wire.size(), ga.data());
      ASSERT_TRUE(n.ok());
      ASSERT_TRUE(server->decode(wire.data(), *n, gs.data()).ok());
      ASSERT_EQ(0, std::memcmp(ga.data(), gs.data(), sizeof(double) * d));
      agent->commit();  // the sender's V moves when the receiver took the message
      ASSERT_EQ(0, std::memcmp(agent->memory(), server->memory(), sizeof(double) * d));
      if (t >= 150) {
        double e = 0;
        for (int i = 0; i < d; ++i) e += (gs[i] - g[i]) * (gs[i] - g[i]);
        late_err += e / 50;
      }
    }
    // Without V the error stays at the dithering variance (order omega ||g||^2,
    // omega = 2 here); with V, ||g - V_t||^2 contracts by (1 - alpha) per round
    // in expectation, so after 150 rounds it is below 1e-6 ||g||^2 by far.
    if (cv) EXPECT_LT(late_err, 1e-6 * Norm2(g));
    else EXPECT_GT(late_err, 0.05 * Norm2(g));
  }
  // A bad payload leaves the receiver's memory untouched.
  std::vector<uint8_t> mem(1024);
  Arena arena(mem.data(), mem.size());
  auto server = CompressedDifference<double>::create(arena, d, q, true);
  std::vector<double> gs(d);
  uint8_t junk[3] = {1, 2, 3};
  EXPECT_FALSE(server->decode(junk, 3, gs.data()).ok());
  for (int i = 0; i < d; ++i) EXPECT_EQ(server->memory()[i], 0.0);
}

}  // namespace
}  // namespace fedrt::compression
