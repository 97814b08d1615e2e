// Known-answer tests of the secure-aggregation crypto wrappers (RFC 7748,
// RFC 5869, RFC 8439), run through fedrt::secagg, not mbedTLS directly.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fedrt/secagg/crypto.h"

namespace fedrt::secagg {
namespace {

std::vector<uint8_t> Hex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return out;
}
std::string ToHex(const uint8_t* p, size_t n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += k[p[i] >> 4];
    s += k[p[i] & 15];
  }
  return s;
}
std::vector<uint8_t> Range(int from, int n) {
  std::vector<uint8_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(from + i);
  return v;
}

TEST(SecAggCrypto, X25519Rfc7748Section52) {
  struct Case { const char *k, *u, *out; };
  const Case cases[] = {
      {"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
       "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
       "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
      // The top bit of this u is set and must be ignored.
      {"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
       "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
       "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
  };
  for (const Case& c : cases) {
    uint8_t out[32];
    ASSERT_TRUE(X25519(Hex(c.k).data(), Hex(c.u).data(), out).ok());
    EXPECT_EQ(ToHex(out, 32), c.out);
  }
}

TEST(SecAggCrypto, X25519Rfc7748IteratedOnceAnd1000Times) {
  uint8_t k[32] = {9}, u[32] = {9}, r[32];
  for (int i = 1; i <= 1000; ++i) {
    ASSERT_TRUE(X25519(k, u, r).ok());
    std::memcpy(u, k, 32);
    std::memcpy(k, r, 32);
    if (i == 1) {
      EXPECT_EQ(ToHex(k, 32), "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
    }
  }
  EXPECT_EQ(ToHex(k, 32), "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
}

TEST(SecAggCrypto, X25519Rfc7748Section61DiffieHellman) {
  const auto a = Hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
  const auto b = Hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
  uint8_t pa[32], pb[32], ka[32], kb[32];
  ASSERT_TRUE(X25519Public(a.data(), pa).ok());
  ASSERT_TRUE(X25519Public(b.data(), pb).ok());
  EXPECT_EQ(ToHex(pa, 32), "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
  EXPECT_EQ(ToHex(pb, 32), "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
  ASSERT_TRUE(X25519(a.data(), pb, ka).ok());
  ASSERT_TRUE(X25519(b.data(), pa, kb).ok());
  EXPECT_EQ(ToHex(ka, 32), "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
  EXPECT_EQ(ToHex(kb, 32), ToHex(ka, 32));
}

TEST(SecAggCrypto, X25519RejectsLowOrderPeerKey) {
  uint8_t k[32] = {1, 2, 3}, zero[32] = {0}, one[32] = {1}, out[32];
  EXPECT_FALSE(X25519(k, zero, out).ok());
  EXPECT_FALSE(X25519(k, one, out).ok());
}

TEST(SecAggCrypto, HkdfRfc5869TestCases1To3) {
  struct Case { std::vector<uint8_t> ikm, salt, info; size_t len; const char* okm; };
  const Case cases[] = {
      {std::vector<uint8_t>(22, 0x0b), Range(0x00, 13), Range(0xf0, 10), 42,
       "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"},
      {Range(0x00, 80), Range(0x60, 80), Range(0xb0, 80), 82,
       "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f0"
       "9b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"},
      {std::vector<uint8_t>(22, 0x0b), {}, {}, 42,
       "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> okm(c.len);
    ASSERT_TRUE(HkdfSha256(c.salt.data(), c.salt.size(), c.ikm.data(), c.ikm.size(), c.info.data(), c.info.size(),
                           okm.data(), okm.size())
                    .ok());
    EXPECT_EQ(ToHex(okm.data(), okm.size()), c.okm);
  }
  uint8_t big[1];
  EXPECT_FALSE(HkdfSha256(nullptr, 0, big, 1, nullptr, 0, big, 0).ok());
}

const char kSunscreen[] =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";

TEST(SecAggCrypto, ChaCha20Rfc8439BlockFunction232) {
  const auto key = Range(0, 32);
  const auto nonce = Hex("000000090000004a00000000");
  uint8_t block[64];
  ASSERT_TRUE(ChaCha20Xor(key.data(), nonce.data(), 1, nullptr, block, 64).ok());
  EXPECT_EQ(ToHex(block, 64),
            "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4ed2826446079faa0914c2d705d98b02a2b5129cd1de1"
            "64eb9cbd083e8a2503c4e");
}

TEST(SecAggCrypto, ChaCha20Rfc8439Encryption242) {
  const auto key = Range(0, 32);
  const auto nonce = Hex("000000000000004a00000000");
  const size_t n = std::strlen(kSunscreen);
  std::vector<uint8_t> ct(n), back(n);
  ASSERT_TRUE(ChaCha20Xor(key.data(), nonce.data(), 1, reinterpret_cast<const uint8_t*>(kSunscreen), ct.data(), n).ok());
  EXPECT_EQ(ToHex(ct.data(), n),
            "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0bf91b65c5524733ab8f593dabcd62b3571639d624e65"
            "152ab8f530c359f0861d807ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab77937365af90bbf74a35be6b40b8e"
            "edf2785e42874d");
  ASSERT_TRUE(ChaCha20Xor(key.data(), nonce.data(), 1, ct.data(), back.data(), n).ok());
  EXPECT_EQ(std::string(back.begin(), back.end()), kSunscreen);
}

TEST(SecAggCrypto, AeadRfc8439Section282AndTamperDetection) {
  const auto key = Range(0x80, 32);
  const auto nonce = Hex("070000004041424344454647");
  const auto aad = Hex("50515253c0c1c2c3c4c5c6c7");
  const size_t n = std::strlen(kSunscreen);
  std::vector<uint8_t> ct(n), pt(n);
  uint8_t tag[16];
  ASSERT_TRUE(AeadSeal(key.data(), nonce.data(), aad.data(), aad.size(), reinterpret_cast<const uint8_t*>(kSunscreen),
                       n, ct.data(), tag)
                  .ok());
  EXPECT_EQ(ToHex(ct.data(), n),
            "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e0"
            "60b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d2"
            "6586cec64b6116");
  EXPECT_EQ(ToHex(tag, 16), "1ae10b594f09e26a7e902ecbd0600691");
  ASSERT_TRUE(AeadOpen(key.data(), nonce.data(), aad.data(), aad.size(), ct.data(), n, tag, pt.data()).ok());
  EXPECT_EQ(std::string(pt.begin(), pt.end()), kSunscreen);
  ct[5] ^= 1;
  const Status st = AeadOpen(key.data(), nonce.data(), aad.data(), aad.size(), ct.data(), n, tag, pt.data());
  EXPECT_EQ(st.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(std::string(st.message()).find("tag"), std::string::npos);
}

TEST(SecAggCrypto, KeystreamWordsAreTheChaCha20StreamInZ2To32) {
  const auto key = Range(0, 32);
  const auto nonce = Hex("000000000000004a00000000");
  uint8_t raw[4 * 37];
  ASSERT_TRUE(ChaCha20Xor(key.data(), nonce.data(), 0, nullptr, raw, sizeof raw).ok());
  std::vector<uint32_t> y(37, 5u);
  ASSERT_TRUE(AddKeystreamWords(key.data(), nonce.data(), +1, y.data(), y.size()).ok());
  for (size_t i = 0; i < y.size(); ++i) {
    const uint32_t w = raw[4 * i] | raw[4 * i + 1] << 8 | raw[4 * i + 2] << 16 | static_cast<uint32_t>(raw[4 * i + 3]) << 24;
    EXPECT_EQ(y[i], 5u + w);
  }
  ASSERT_TRUE(AddKeystreamWords(key.data(), nonce.data(), -1, y.data(), y.size()).ok());
  for (uint32_t v : y) EXPECT_EQ(v, 5u);
}

}  // namespace
}  // namespace fedrt::secagg
