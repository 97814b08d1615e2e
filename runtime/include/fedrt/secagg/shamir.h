#pragma once
// Shamir t-of-n secret sharing over GF(2^8) (AES field, x^8 + x^4 + x^3 + x + 1),
// bytewise: byte j of the secret is p_j(0) of a random polynomial p_j of degree
// t - 1, and holder x in {1..255} gets p_j(x). Any t shares give the secret by
// Lagrange interpolation at 0, s_j = sum_i y_ij prod_{m != i} x_m / (x_m - x_i);
// any t - 1 shares are uniformly distributed whatever the secret.
// Device code: header-only, no heap, caller buffers, constant-time field arithmetic.

#include <cstddef>
#include <cstdint>

#include "fedrt/core/status.h"

namespace fedrt::secagg {

constexpr uint32_t kMaxShamirHolders = 255;  // nonzero x-coordinates of GF(2^8)

// a * b in GF(2^8) (shift-and-add, no table lookups indexed by secrets).
inline uint8_t GfMul(uint8_t a, uint8_t b) {
  uint8_t r = 0;
  for (int i = 0; i < 8; ++i) {
    r ^= static_cast<uint8_t>(-(b & 1) & a);
    const uint8_t hi = static_cast<uint8_t>(-(a >> 7));
    a = static_cast<uint8_t>((a << 1) ^ (hi & 0x1b));
    b >>= 1;
  }
  return r;
}
// a^-1 = a^254 (a != 0).
inline uint8_t GfInv(uint8_t a) {
  uint8_t r = 1, p = a;
  for (int e = 254; e > 0; e >>= 1) {
    if (e & 1) r = GfMul(r, p);
    p = GfMul(p, p);
  }
  return r;
}

// Share for holder x (1..255) of secret[0..len): out[j] = s_j + sum_{k=1}^{t-1} c_{k,j} x^k
// with coefficients c_{k,j} = random[(k - 1) len + j]; random holds (t - 1) len
// uniformly random bytes, the same for every holder of one sharing.
inline Status ShamirShare(const uint8_t* secret, size_t len, uint32_t t, const uint8_t* random, uint8_t x,
                          uint8_t* out) {
  if (t < 1 || t > kMaxShamirHolders) return Status::InvalidArgument("shamir: threshold must be in [1, 255]");
  if (x == 0) return Status::InvalidArgument("shamir: holder x-coordinate must be nonzero");
  if (len == 0) return Status::InvalidArgument("shamir: empty secret");
  for (size_t j = 0; j < len; ++j) {
    uint8_t acc = 0;  // Horner: ((c_{t-1} x + c_{t-2}) x + ...) x + s
    for (uint32_t k = t - 1; k >= 1; --k) acc = GfMul(static_cast<uint8_t>(acc ^ random[(k - 1) * len + j]), x);
    out[j] = static_cast<uint8_t>(acc ^ secret[j]);
  }
  return Status::Ok();
}

// Shares for holders x = 1..n into shares[(x - 1) len ..): n * len bytes.
inline Status ShamirSplit(const uint8_t* secret, size_t len, uint32_t t, uint32_t n, const uint8_t* random,
                          uint8_t* shares) {
  if (n < t) return Status::InvalidArgument("shamir: fewer holders than the threshold");
  if (n > kMaxShamirHolders) return Status::InvalidArgument("shamir: at most 255 holders");
  for (uint32_t x = 1; x <= n; ++x)
    FEDRT_TRY(ShamirShare(secret, len, t, random, static_cast<uint8_t>(x), shares + (x - 1) * len));
  return Status::Ok();
}

// Value at `at` of the polynomial through points (xs[i], ys[i * len + j]), i < t.
inline void ShamirInterpolate(const uint8_t* xs, const uint8_t* ys, size_t len, uint32_t t, uint8_t at, uint8_t* out) {
  for (size_t j = 0; j < len; ++j) out[j] = 0;
  for (uint32_t i = 0; i < t; ++i) {
    uint8_t num = 1, den = 1;  // L_i(at) = prod_{m != i} (at - x_m) / (x_i - x_m)
    for (uint32_t m = 0; m < t; ++m) {
      if (m == i) continue;
      num = GfMul(num, static_cast<uint8_t>(at ^ xs[m]));
      den = GfMul(den, static_cast<uint8_t>(xs[i] ^ xs[m]));
    }
    const uint8_t l = GfMul(num, GfInv(den));
    for (size_t j = 0; j < len; ++j) out[j] ^= GfMul(l, ys[i * len + j]);
  }
}

// The arguments of a reconstruction from m shares: t in [1, 255], len > 0,
// m >= t, distinct nonzero x-coordinates.
inline Status ShamirCheckShares(const uint8_t* xs, size_t m, size_t len, uint32_t t) {
  if (t < 1 || t > kMaxShamirHolders) return Status::InvalidArgument("shamir: threshold must be in [1, 255]");
  if (len == 0) return Status::InvalidArgument("shamir: empty secret");
  if (m < t) return Status::FailedPrecondition("shamir: fewer shares than the threshold");
  for (size_t i = 0; i < m; ++i) {
    if (xs[i] == 0) return Status::InvalidArgument("shamir: share with x-coordinate 0");
    for (size_t k = 0; k < i; ++k)
      if (xs[k] == xs[i]) return Status::InvalidArgument("shamir: two shares with the same x-coordinate");
  }
  return Status::Ok();
}

// Recovers secret[0..len) from m >= t shares (xs[i], ys[i * len ..]): interpolates
// at 0 through the first t and checks that every further share lies on the same
// polynomial (DATA_LOSS otherwise: a corrupted or foreign share).
inline Status ShamirCombine(const uint8_t* xs, const uint8_t* ys, size_t m, size_t len, uint32_t t, uint8_t* secret) {
  FEDRT_TRY(ShamirCheckShares(xs, m, len, t));
  ShamirInterpolate(xs, ys, len, t, 0, secret);
  for (size_t i = t; i < m; ++i) {
    // p(x_i) = sum_a L_a(x_i) y_a from the first t shares; L_a(x_i) once per share.
    uint8_t coef[kMaxShamirHolders];
    for (uint32_t a = 0; a < t; ++a) {
      uint8_t num = 1, den = 1;
      for (uint32_t b = 0; b < t; ++b) {
        if (b == a) continue;
        num = GfMul(num, static_cast<uint8_t>(xs[i] ^ xs[b]));
        den = GfMul(den, static_cast<uint8_t>(xs[a] ^ xs[b]));
      }
      coef[a] = GfMul(num, GfInv(den));
    }
    for (size_t j = 0; j < len; ++j) {
      uint8_t v = 0;
      for (uint32_t a = 0; a < t; ++a) v ^= GfMul(coef[a], ys[a * len + j]);
      if (v != ys[i * len + j]) return Status::DataLoss("shamir: shares are inconsistent (corrupted share)");
    }
  }
  return Status::Ok();
}

}  // namespace fedrt::secagg
