// Random-dithering codec on the microcontroller: the payload bytes of a fixed
// vector equal the host's (gen_expected.cc), the decoder returns exactly the
// encoder's dequantized vector, and malformed payloads are rejected.

#include "fedrt/compression/dithering.h"
#include "fw_check.h"

namespace {

const float kV[8] = {0.75f, -1.5f, 0.0f, 2.25f, -0.125f, 3.0f, -2.0f, 0.5f};
const uint8_t kFixed[9] = {0xf2, 0x21, 0x93, 0x40, 0x64, 0x01, 0x07, 0x64, 0x13};
const uint8_t kElias[9] = {0xf2, 0x21, 0x93, 0x40, 0xc6, 0x46, 0x88, 0xc2, 0x0b};

void RoundTrip(bool elias, const uint8_t* want, size_t want_n) {
  using namespace fedrt;
  CounterRng rng(777, 0, 1, 2, RngStream::kCompression);
  uint8_t out[64];
  float dec[8], back[8];
  auto n = compression::DitherEncode<float>(kV, 8, 15, elias, rng, out, sizeof out, dec);
  FW_CHECK(n.ok());
  if (!n.ok()) return;
  FW_CHECK(*n == want_n);
  bool same = *n == want_n;
  for (size_t i = 0; same && i < want_n; ++i) same = out[i] == want[i];
  FW_CHECK(same);
  FW_CHECK(compression::DitherDecode<float>(out, *n, 8, 15, elias, back).ok());
  bool exact = true;
  for (int i = 0; i < 8; ++i) exact = exact && back[i] == dec[i];
  FW_CHECK(exact);
  // |Q(v)_i - v_i| <= r / s with r = ||v||_2 (about 4.3 here).
  for (int i = 0; i < 8; ++i) FW_CHECK_NEAR(back[i], kV[i], 4.3f / 15 + 1e-5f);
  // Truncated and over-long payloads are rejected.
  FW_CHECK(!compression::DitherDecode<float>(out, *n - 1, 8, 15, elias, back).ok());
  out[*n] = 0;
  FW_CHECK(!compression::DitherDecode<float>(out, *n + 1, 8, 15, elias, back).ok());
  // A NaN norm is rejected.
  uint8_t bad[64];
  for (size_t i = 0; i < *n; ++i) bad[i] = out[i];
  bad[0] = 0xff, bad[1] = 0xff, bad[2] = 0xff, bad[3] = 0x7f;
  FW_CHECK(!compression::DitherDecode<float>(bad, *n, 8, 15, elias, back).ok());
}

}  // namespace

int main() {
  RoundTrip(false, kFixed, sizeof kFixed);
  RoundTrip(true, kElias, sizeof kElias);
  // A NaN entry cannot be encoded.
  float nan_v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  nan_v[2] = __builtin_nanf("");
  fedrt::CounterRng rng(1, 0);
  uint8_t out[64];
  float dec[8];
  FW_CHECK(!fedrt::compression::DitherEncode<float>(nan_v, 8, 15, false, rng, out, sizeof out, dec).ok());
  return fw_result("codec_test");
}
