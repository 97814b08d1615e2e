// Built with -mavx2 and without -mfma (cmake: x86-64 hosts only); chosen at
// run time by LogisticOracle<double>::gradient when the CPU has AVX2.
#include "fedrt/problems/logistic_avx2.h"

#include <immintrin.h>

#include <cmath>

namespace fedrt::problems::detail {

bool LogisticAvx2Supported() {
  static const bool yes = __builtin_cpu_supports("avx2") != 0;
  return yes;
}

namespace {

// Rows r0..r3 (4 doubles each) -> columns c0..c3 (c_k = (r0[k], r1[k], r2[k], r3[k])).
inline void Transpose4(__m256d r0, __m256d r1, __m256d r2, __m256d r3, __m256d& c0, __m256d& c1, __m256d& c2,
                       __m256d& c3) {
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1);  // r0[0] r1[0] r0[2] r1[2]
  const __m256d t1 = _mm256_unpackhi_pd(r0, r1);  // r0[1] r1[1] r0[3] r1[3]
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3);
  const __m256d t3 = _mm256_unpackhi_pd(r2, r3);
  c0 = _mm256_permute2f128_pd(t0, t2, 0x20);
  c1 = _mm256_permute2f128_pd(t1, t3, 0x20);
  c2 = _mm256_permute2f128_pd(t0, t2, 0x31);
  c3 = _mm256_permute2f128_pd(t1, t3, 0x31);
}

// z + the terms k..k+3 of the dot products of rows[0..3] with x, one lane
// per row, each lane adding its terms in k order.
inline __m256d AddFourTerms(__m256d z, const double* const* rows, const double* x, int k) {
  __m256d c0, c1, c2, c3;
  Transpose4(_mm256_loadu_pd(rows[0] + k), _mm256_loadu_pd(rows[1] + k), _mm256_loadu_pd(rows[2] + k),
             _mm256_loadu_pd(rows[3] + k), c0, c1, c2, c3);
  z = _mm256_add_pd(z, _mm256_mul_pd(c0, _mm256_broadcast_sd(x + k)));
  z = _mm256_add_pd(z, _mm256_mul_pd(c1, _mm256_broadcast_sd(x + k + 1)));
  z = _mm256_add_pd(z, _mm256_mul_pd(c2, _mm256_broadcast_sd(x + k + 2)));
  return _mm256_add_pd(z, _mm256_mul_pd(c3, _mm256_broadcast_sd(x + k + 3)));
}

// s_i = -y_i z_i for the 8 samples a[0..7].
void Dots8(const double* const* a, const double* y, const double* x, int p, bool intercept, double* s) {
  // z for samples 0..3 (lo) and 4..7 (hi): each lane's sum in k order.
  __m256d zlo = _mm256_setzero_pd(), zhi = _mm256_setzero_pd();
  int k = 0;
  for (; k + 4 <= p; k += 4) {
    zlo = AddFourTerms(zlo, a, x, k);
    zhi = AddFourTerms(zhi, a + 4, x, k);
  }
  for (; k < p; ++k) {
    const __m256d xk = _mm256_broadcast_sd(x + k);
    zlo = _mm256_add_pd(zlo, _mm256_mul_pd(_mm256_setr_pd(a[0][k], a[1][k], a[2][k], a[3][k]), xk));
    zhi = _mm256_add_pd(zhi, _mm256_mul_pd(_mm256_setr_pd(a[4][k], a[5][k], a[6][k], a[7][k]), xk));
  }
  if (intercept) {
    const __m256d xp = _mm256_broadcast_sd(x + p);
    zlo = _mm256_add_pd(zlo, xp);
    zhi = _mm256_add_pd(zhi, xp);
  }
  const __m256d sign = _mm256_set1_pd(-0.0);
  _mm256_storeu_pd(s, _mm256_mul_pd(_mm256_xor_pd(_mm256_loadu_pd(y), sign), zlo));
  _mm256_storeu_pd(s + 4, _mm256_mul_pd(_mm256_xor_pd(_mm256_loadu_pd(y + 4), sign), zhi));
}

// g[k] += coef_i a_i[k] for the 8 samples a[0..7], i in order for every k.
void Axpy8(const double* const* a, const double* coef, int p, bool intercept, double* g) {
  int k = 0;
  for (; k + 8 <= p; k += 8) {
    __m256d g0 = _mm256_loadu_pd(g + k), g1 = _mm256_loadu_pd(g + k + 4);
    for (int i = 0; i < 8; ++i) {
      const __m256d c = _mm256_broadcast_sd(coef + i);
      g0 = _mm256_add_pd(g0, _mm256_mul_pd(c, _mm256_loadu_pd(a[i] + k)));
      g1 = _mm256_add_pd(g1, _mm256_mul_pd(c, _mm256_loadu_pd(a[i] + k + 4)));
    }
    _mm256_storeu_pd(g + k, g0);
    _mm256_storeu_pd(g + k + 4, g1);
  }
  for (; k + 4 <= p; k += 4) {
    __m256d g0 = _mm256_loadu_pd(g + k);
    for (int i = 0; i < 8; ++i) g0 = _mm256_add_pd(g0, _mm256_mul_pd(_mm256_broadcast_sd(coef + i), _mm256_loadu_pd(a[i] + k)));
    _mm256_storeu_pd(g + k, g0);
  }
  for (; k < p; ++k)
    for (int i = 0; i < 8; ++i) g[k] += coef[i] * a[i][k];
  if (intercept)
    for (int i = 0; i < 8; ++i) g[p] += coef[i];
}

}  // namespace

void LogisticBlocksAvx2(const double* const* a, const double* y, int blocks, const double* x, int p, bool intercept,
                        double inv_m, double* g) {
  constexpr int kMax = 8 * kLogisticAvx2MaxBlocks;
  alignas(32) double s[kMax], t[kMax], coef[kMax];
  const int n = 8 * blocks;
  for (int b = 0; b < blocks; ++b) Dots8(a + 8 * b, y + 8 * b, x, p, intercept, s + 8 * b);
  // sigma(s) = 1 / (1 + e^{-s}) for s >= 0, e^s / (1 + e^s) below
  // (problems::Sigmoid): t = exp(-|s|) by glibc, one call per sample.
  for (int i = 0; i < n; ++i) t[i] = std::exp(s[i] >= 0.0 ? -s[i] : s[i]);
  const __m256d one = _mm256_set1_pd(1.0), zero = _mm256_setzero_pd(), m = _mm256_set1_pd(inv_m),
                sign = _mm256_set1_pd(-0.0);
  for (int i = 0; i < n; i += 4) {
    const __m256d sv = _mm256_load_pd(s + i), tv = _mm256_load_pd(t + i);
    const __m256d num = _mm256_blendv_pd(tv, one, _mm256_cmp_pd(sv, zero, _CMP_GE_OQ));  // s >= 0: 1, else t
    const __m256d sig = _mm256_div_pd(num, _mm256_add_pd(one, tv));
    const __m256d neg_y = _mm256_xor_pd(_mm256_loadu_pd(y + i), sign);
    _mm256_store_pd(coef + i, _mm256_mul_pd(_mm256_mul_pd(neg_y, sig), m));
  }
  for (int b = 0; b < blocks; ++b) Axpy8(a + 8 * b, coef + 8 * b, p, intercept, g);
}

}  // namespace fedrt::problems::detail
