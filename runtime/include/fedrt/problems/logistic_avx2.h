#pragma once
// Host x86-64 only (FEDRT_LOGISTIC_AVX2, set by the build): AVX2 kernels of
// LogisticOracle<double>::gradient's blocks of 8 samples, in a translation
// unit built with -mavx2 and without -mfma. Vectors run ACROSS samples (the
// 8 dot products) or across coordinates (the gradient's sums), never inside
// one sum, and multiplies and adds stay separate roundings: every number is
// the bits of the one-by-one loop. glibc's exp is called once per sample, as
// there.

#include <cstdint>

namespace fedrt::problems::detail {

// Whether this CPU runs the AVX2 kernel (checked once).
bool LogisticAvx2Supported();

// Samples per call at most (blocks of 8): their exp calls run back to back
// and their divisions overlap, instead of one block's chain at a time.
constexpr int kLogisticAvx2MaxBlocks = 4;

// For the 8 * blocks samples with rows a[i] (p features) and labels y[i]:
// z_i = sum_k a_i[k] x[k] (+ x[p] when intercept), in k order from 0;
// coef_i = -y_i sigma(-y_i z_i) inv_m; then g[k] += coef_i a_i[k] and,
// when intercept, g[p] += coef_i, for i in order. 1 <= blocks <= kLogisticAvx2MaxBlocks.
void LogisticBlocksAvx2(const double* const* a, const double* y, int blocks, const double* x, int p, bool intercept,
                        double inv_m, double* g);

}  // namespace fedrt::problems::detail
