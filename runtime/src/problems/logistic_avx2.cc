// Built with -mavx2 and without -mfma (cmake: x86-64 hosts only); chosen at
// run time by LogisticOracle<double>::gradient when the CPU has AVX2.
#include "fedrt/problems/logistic_avx2.h"

#include <immintrin.h>

#include <dlfcn.h>

#include <cmath>

namespace fedrt::problems::detail {

bool LogisticAvx2Supported() {
  static const bool yes = __builtin_cpu_supports("avx2") != 0;
  return yes;
}

namespace {

double LibmExp(double v) { return std::exp(v); }

// glibc exports its exp without the errno wrapper as __exp_finite (a
// compatibility symbol since 2.31, the same implementation as exp).
using ExpFn = double (*)(double);
ExpFn Exp() {
  static const ExpFn f = [] {
    void* e = dlvsym(RTLD_DEFAULT, "__exp_finite", "GLIBC_2.15");
    return e != nullptr ? reinterpret_cast<ExpFn>(e) : &LibmExp;
  }();
  return f;
}

// Columns k and k + 1 of rows r[0..3]: (r0[k], r1[k], r2[k], r3[k]) and the same at k + 1.
inline void TwoColumns(const double* const* r, int k, __m256d& c0, __m256d& c1) {
  const __m256d r02 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(r[0] + k)), _mm_loadu_pd(r[2] + k), 1);
  const __m256d r13 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(r[1] + k)), _mm_loadu_pd(r[3] + k), 1);
  c0 = _mm256_unpacklo_pd(r02, r13);
  c1 = _mm256_unpackhi_pd(r02, r13);
}

// z + the terms k..k+3 of the dot products of rows[0..3] with x, one lane
// per row, each lane adding its terms in k order.
inline __m256d AddFourTerms(__m256d z, const double* const* rows, const double* x, int k) {
  __m256d c0, c1, c2, c3;
  TwoColumns(rows, k, c0, c1);
  TwoColumns(rows, k + 2, c2, c3);
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

// coef_i = -y_i sigma(-y_i z_i) inv_m for 4 samples from s_i = -y_i z_i and
// t_i = exp(-|s_i|): sigma(s) = 1 / (1 + e^{-s}) for s >= 0, e^s / (1 + e^s)
// below (problems::Sigmoid).
inline __m256d Coef4(const double* s, const double* t, const double* y, double inv_m) {
  const __m256d sv = _mm256_load_pd(s), tv = _mm256_load_pd(t);
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d num = _mm256_blendv_pd(tv, one, _mm256_cmp_pd(sv, _mm256_setzero_pd(), _CMP_GE_OQ));  // s >= 0: 1
  const __m256d sig = _mm256_div_pd(num, _mm256_add_pd(one, tv));
  const __m256d neg_y = _mm256_xor_pd(_mm256_load_pd(y), _mm256_set1_pd(-0.0));
  return _mm256_mul_pd(_mm256_mul_pd(neg_y, sig), _mm256_set1_pd(inv_m));
}

// g[k] += coef_i a_i[k] for the samples a[0..count), i in order for every k.
void Axpy(const double* const* a, const double* coef, int count, int p, bool intercept, double* g) {
  int k = 0;
  for (; k + 8 <= p; k += 8) {
    __m256d g0 = _mm256_loadu_pd(g + k), g1 = _mm256_loadu_pd(g + k + 4);
    for (int i = 0; i < count; ++i) {
      const __m256d c = _mm256_broadcast_sd(coef + i);
      g0 = _mm256_add_pd(g0, _mm256_mul_pd(c, _mm256_loadu_pd(a[i] + k)));
      g1 = _mm256_add_pd(g1, _mm256_mul_pd(c, _mm256_loadu_pd(a[i] + k + 4)));
    }
    _mm256_storeu_pd(g + k, g0);
    _mm256_storeu_pd(g + k + 4, g1);
  }
  for (; k + 4 <= p; k += 4) {
    __m256d g0 = _mm256_loadu_pd(g + k);
    for (int i = 0; i < count; ++i)
      g0 = _mm256_add_pd(g0, _mm256_mul_pd(_mm256_broadcast_sd(coef + i), _mm256_loadu_pd(a[i] + k)));
    _mm256_storeu_pd(g + k, g0);
  }
  for (; k < p; ++k)
    for (int i = 0; i < count; ++i) g[k] += coef[i] * a[i][k];
  if (intercept)
    for (int i = 0; i < count; ++i) g[p] += coef[i];
}

// Low 64 bits of v * c in every lane (AVX2 has no 64-bit multiply).
inline __m256i MulLo64(__m256i v, uint64_t c) {
  const __m256i clo = _mm256_set1_epi64x(static_cast<int64_t>(c & 0xFFFFFFFFull));
  const __m256i chi = _mm256_set1_epi64x(static_cast<int64_t>(c >> 32));
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(v, 32), clo), _mm256_mul_epu32(v, chi));
  return _mm256_add_epi64(_mm256_mul_epu32(v, clo), _mm256_slli_epi64(cross, 32));
}

// Mix64 of core/rng.h in every lane.
inline __m256i Mix64x4(__m256i z) {
  z = MulLo64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xBF58476D1CE4E5B9ull);
  z = MulLo64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94D049BB133111EBull);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // CounterRng::kGolden

// j[i] = CounterRng::below(n) of draw first + i + 1 from `state`, i < count
// (rounded up to 4: the draws past count are computed, valid indices, unused).
void DrawBelow(uint64_t state, uint64_t first, int count, uint32_t n, uint32_t* j) {
  const __m256i step = _mm256_set1_epi64x(static_cast<int64_t>(4 * kGolden));
  __m256i s = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(state + first * kGolden)),
                               _mm256_setr_epi64x(static_cast<int64_t>(kGolden), static_cast<int64_t>(2 * kGolden),
                                                  static_cast<int64_t>(3 * kGolden), static_cast<int64_t>(4 * kGolden)));
  const __m256i nv = _mm256_set1_epi64x(n);
  // The four 32-bit results sit in the low halves after the final shift; pick them.
  const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  for (int i = 0; i < count; i += 4, s = _mm256_add_epi64(s, step)) {
    const __m256i r = _mm256_srli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(Mix64x4(s), 32), nv), 32);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(j + i), _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(r, pick)));
  }
}

// a[i] = x + j[i] p and yb[i] = y[j[i]] for i < count (a multiple of 4).
void Gather(const LogisticRows& rows, const uint32_t* j, int count, const double** a, double* yb) {
  const __m256i stride = _mm256_set1_epi64x(static_cast<int64_t>(rows.p) * 8);
  const __m256i base = _mm256_set1_epi64x(static_cast<int64_t>(reinterpret_cast<uintptr_t>(rows.x)));
  const __m256d all = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));  // gather every lane (and no undefined source)
  for (int i = 0; i < count; i += 4) {
    const __m128i ji = _mm_loadu_si128(reinterpret_cast<const __m128i*>(j + i));
    const __m256i off = _mm256_mul_epu32(_mm256_cvtepu32_epi64(ji), stride);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + i), _mm256_add_epi64(base, off));
    _mm256_storeu_pd(yb + i, _mm256_mask_i32gather_pd(_mm256_setzero_pd(), rows.y, ji, all, 8));
  }
}

// Samples per pass (a batch of up to 128 in one): draws, dots, exp calls and
// the sums each run back to back over the pass.
constexpr int kChunk = 128;

}  // namespace

double LogisticExp(double v) { return Exp()(v); }

void LogisticGradientAvx2(const LogisticRows& rows, double l2, const double* x, double* g, uint32_t batch,
                          uint64_t rng_state) {
  const int p = rows.p, d = p + (rows.intercept ? 1 : 0);
  for (int k = 0; k < d; ++k) g[k] = l2 * x[k];
  const uint32_t m = batch == 0 ? rows.n : batch;
  const double inv_m = 1.0 / static_cast<double>(m);
  const ExpFn exp = Exp();
  alignas(32) uint32_t j[kChunk + 8];
  alignas(32) double yb[kChunk + 8], s[kChunk + 8], t[kChunk + 8], coef[kChunk + 8];
  const double* a[kChunk + 8];
  for (uint32_t b = 0; b < m; b += kChunk) {
    const int count = m - b < static_cast<uint32_t>(kChunk) ? static_cast<int>(m - b) : kChunk;
    if (batch == 0) {
      for (int i = 0; i < count; ++i) j[i] = b + static_cast<uint32_t>(i);
    } else {
      DrawBelow(rng_state, b, count, rows.n, j);
    }
    const int padded = (count + 7) & ~7;  // the last block's missing samples: sample 0 again, unused
    for (int i = count; i < padded; ++i) j[i] = j[0];
    Gather(rows, j, padded, a, yb);
    for (int i = 0; i < padded; i += 8) Dots8(a + i, yb + i, x, p, rows.intercept, s + i);
    // exp(-|s|) by glibc, one call per sample, back to back (the arguments
    // s >= 0 ? -s : s 4 at a time first); then the coefficients 4 at a time.
    for (int i = 0; i < padded; i += 4) {
      const __m256d sv = _mm256_load_pd(s + i);
      _mm256_store_pd(t + i, _mm256_blendv_pd(sv, _mm256_xor_pd(sv, _mm256_set1_pd(-0.0)),
                                              _mm256_cmp_pd(sv, _mm256_setzero_pd(), _CMP_GE_OQ)));
    }
    for (int i = 0; i < count; ++i) t[i] = exp(t[i]);
    for (int i = count; i < padded; ++i) t[i] = 1.0;
    for (int i = 0; i < padded; i += 4) _mm256_store_pd(coef + i, Coef4(s + i, t + i, yb + i, inv_m));
    Axpy(a, coef, count, p, rows.intercept, g);
  }
}

}  // namespace fedrt::problems::detail
