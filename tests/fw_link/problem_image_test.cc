// Firmware-side validation of provisioned data and log formatting (device
// code, built on the host): a problem image round-trips, and every kind of
// damage is rejected with a status naming it.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fedrt/core/arena.h"
#include "fedrt/fw/log_line.h"
#include "fedrt/fw/problem_image.h"

namespace fedrt::fw {
namespace {

// A 3-state, d = 2 problem built by TdOracle<float>::create, as fedrt-fw-provision does.
std::vector<uint64_t> MakeImage(size_t* bytes) {
  const double phi[] = {1.0, 0.0, 0.0, 1.0, 0.5, 0.5};
  const double reward[] = {1.0, 0.0, -1.0};
  const double joint[] = {0.1, 0.2, 0.0, 0.0, 0.3, 0.1, 0.2, 0.0, 0.1};
  std::vector<uint8_t> mem(4096);
  Arena arena(mem.data(), mem.size());
  auto o = problems::TdOracle<float>::create(arena, 2, 3, 0.9, phi, reward, joint);
  EXPECT_TRUE(o.ok());
  ProblemImageHeader h{};
  h.magic = kProblemImageMagic;
  h.version = kProblemImageVersion;
  h.config_fingerprint = 0x1234;
  h.agent_index = 5;
  h.dim = 2;
  h.n_states = 3;
  h.n_atoms = o->atoms();
  h.gamma = o->gamma();
  const size_t off = ProblemImageAtomsOffset(3, 2);
  h.total_bytes = static_cast<uint32_t>(off + sizeof(problems::TdTransition<float>) * h.n_atoms);
  std::vector<uint64_t> img((h.total_bytes + 7) / 8, 0);
  auto* p = reinterpret_cast<uint8_t*>(img.data());
  std::memcpy(p + ProblemImagePhiOffset(), o->features(), sizeof(float) * 6);
  std::memcpy(p + off, o->alias_table(), sizeof(problems::TdTransition<float>) * h.n_atoms);
  h.crc32 = Crc32(p + sizeof h, h.total_bytes - sizeof h);
  std::memcpy(p, &h, sizeof h);
  *bytes = h.total_bytes;
  return img;
}

TEST(FwProblemImage, RoundTripsTheOracleTables) {
  size_t n = 0;
  auto img = MakeImage(&n);
  auto v = ParseProblemImage(reinterpret_cast<const uint8_t*>(img.data()), n);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->agent_index, 5u);
  EXPECT_EQ(v->dim, 2);
  EXPECT_EQ(v->config_fingerprint, 0x1234u);
  EXPECT_EQ(v->oracle.atoms(), 6u);  // non-zero entries of the joint law
  EXPECT_FLOAT_EQ(v->oracle.gamma(), 0.9f);
}

TEST(FwProblemImage, RejectsDamage) {
  size_t n = 0;
  auto img = MakeImage(&n);
  auto* p = reinterpret_cast<uint8_t*>(img.data());
  auto parse = [&] { return ParseProblemImage(p, n); };
  p[sizeof(ProblemImageHeader) + 3] ^= 1;  // a feature bit
  auto r = parse();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_STREQ(r.status().message(), "problem image: CRC mismatch");
  p[sizeof(ProblemImageHeader) + 3] ^= 1;
  ASSERT_TRUE(parse().ok());
  p[0] ^= 0xFF;  // magic
  EXPECT_STREQ(parse().status().message(), "problem image: bad magic (not provisioned?)");
  p[0] ^= 0xFF;
  EXPECT_FALSE(ParseProblemImage(p, n - 1).ok());  // truncated
  EXPECT_FALSE(ParseProblemImage(p + 4, n - 4).ok());  // misaligned
  EXPECT_FALSE(ParseProblemImage(nullptr, 0).ok());
}

TEST(FwLogLine, FormatsFields) {
  LogLine l;
  l.add("x=").add_u(1234567890123ull).add(" y=").add_i(-42).add(" h=").add_hex(0x7180u).add(" f=").add_float(
      3.591295e-02);
  EXPECT_STREQ(l.c_str(), "x=1234567890123 y=-42 h=7180 f=3.591295e-02");
  LogLine z;
  z.add_float(0.0).add(" ").add_float(-1.5e10);
  EXPECT_STREQ(z.c_str(), "0.000000e+00 -1.500000e+10");
  LogLine big;
  for (int i = 0; i < 100; ++i) big.add("abcd");
  EXPECT_EQ(big.size(), LogLine::kCapacity - 1);
}

}  // namespace
}  // namespace fedrt::fw
